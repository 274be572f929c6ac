import numpy as np
import pytest
import torch

from pointabstract.data.collate import PART_PAD, collate


def _sample(n: int, seed: int = 0, *, normal: bool = True, part: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    s = {"pos": rng.standard_normal((n, 3)), "label": seed, "category": np.int64(seed + 1)}
    if normal:
        s["normal"] = rng.standard_normal((n, 3)).astype(np.float32)
    if part:
        s["part"] = rng.integers(0, 50, n)
    return s


def test_equal_sizes_stack_with_shapes_and_dtypes():
    samples = [_sample(16, seed) for seed in range(4)]
    batch = collate(samples)
    assert set(batch) == {"pos", "normal", "part", "label", "category"}  # no lengths: not ragged
    assert batch["pos"].shape == (4, 16, 3) and batch["pos"].dtype == torch.float32
    assert batch["normal"].shape == (4, 16, 3) and batch["normal"].dtype == torch.float32
    assert batch["part"].shape == (4, 16) and batch["part"].dtype == torch.int64
    assert batch["label"].tolist() == [0, 1, 2, 3] and batch["label"].dtype == torch.int64
    assert batch["category"].tolist() == [1, 2, 3, 4] and batch["category"].dtype == torch.int64
    for b, s in enumerate(samples):
        assert np.array_equal(batch["pos"][b].numpy(), s["pos"].astype(np.float32))
        assert np.array_equal(batch["part"][b].numpy(), s["part"])


def test_ragged_clouds_are_padded_with_lengths():
    samples = [_sample(5, 0), _sample(3, 1), _sample(7, 2)]
    batch = collate(samples)
    assert batch["lengths"].tolist() == [5, 3, 7] and batch["lengths"].dtype == torch.int64
    assert batch["pos"].shape == batch["normal"].shape == (3, 7, 3) and batch["part"].shape == (3, 7)
    for b, s in enumerate(samples):
        n = len(s["pos"])
        assert np.array_equal(batch["pos"][b, :n].numpy(), s["pos"].astype(np.float32))
        assert np.array_equal(batch["normal"][b, :n].numpy(), s["normal"])
        assert np.array_equal(batch["part"][b, :n].numpy(), s["part"])
        assert (batch["pos"][b, n:] == 0).all() and (batch["normal"][b, n:] == 0).all()
        assert (batch["part"][b, n:] == PART_PAD).all() and PART_PAD == -1


def test_optional_fields_only_when_present_and_extra_fields_batched():
    samples = [_sample(4, i, normal=False, part=False) | {"name": f"s{i}", "scale": 0.5 * i,
                                                            "box": np.full((2, 3), i)} for i in range(2)]
    batch = collate(samples)
    assert set(batch) == {"pos", "label", "category", "name", "scale", "box"}
    assert batch["name"] == ["s0", "s1"] and batch["scale"].tolist() == [0.0, 0.5]
    assert batch["box"].shape == (2, 2, 3)


def test_one_element_label_arrays_and_tensors_are_accepted():
    samples = [{"pos": torch.zeros(2, 3), "label": np.array([4])}, {"pos": np.ones((2, 3)), "label": torch.tensor(5)}]
    batch = collate(samples)
    assert batch["label"].tolist() == [4, 5] and batch["pos"][1].sum() == 6


@pytest.mark.parametrize("samples, error, match", [
    ([_sample(4, 0), _sample(4, 1), _sample(4, 2, normal=False)], ValueError,
     "sample 2 has no 'normal', which sample 0 has"),
    ([_sample(4, 0, part=False), _sample(4, 1)], ValueError, "sample 1 has 'part', which sample 0 lacks"),
    ([], ValueError, "samples is empty"),
    ({"pos": np.zeros((2, 3))}, TypeError, "samples must be a list of sample dicts, got dict"),
    ([_sample(4), "x"], TypeError, "sample 1 must be a dict, got str"),
    ([{"label": 1}], ValueError, "sample 0 has no 'pos'"),
    ([{"pos": np.zeros((2, 3)), "lengths": 2}], ValueError, "must not have a 'lengths' key"),
    ([_sample(4), {**_sample(4), "pos": np.zeros((4, 2))}], ValueError,
     r"sample 1: pos must be a float array of shape \(N, 3\) with N > 0, got float64 \(4, 2\)"),
    ([{**_sample(4), "pos": [[0, 0, 0]] * 4}], TypeError, "sample 0: pos must be a numpy array, got list"),
    ([{**_sample(4), "normal": np.zeros((3, 3))}], ValueError, r"sample 0: normal must be .* \(4, 3\)"),
    ([{**_sample(4), "part": np.zeros(4)}], ValueError, r"sample 0: part must be an int array of shape \(4,\)"),
    ([{**_sample(4), "label": 1.5}], TypeError, "sample 0: label must be an int, got float 1.5"),
    ([{**_sample(4), "category": np.array([1, 2])}], ValueError, r"sample 0: category must be one int"),
    ([{**_sample(4), "color": np.zeros((4, 3))}, {**_sample(5), "color": np.zeros((5, 3))}], ValueError,
     "field 'color' has different shapes across samples"),
    ([{**_sample(4), "meta": {"a": 1}}], TypeError, r"field 'meta' cannot be collated: values of type \['dict'\]"),
])
def test_bad_batches_raise_naming_sample_and_key(samples, error, match):
    with pytest.raises(error, match=match):
        collate(samples)
