"""The model benchmark's plumbing (its numbers come from `pointabstract bench models`)."""

from pointabstract.bench import models as bench


def test_measure_one_reports_time_and_memory():
    row = bench.measure_one("centroid_transformer", 64, batch=2, repeats=1,
                            overrides={"widths": (8, 16, 16, 24), "heads": 2, "k": 6, "fuse_dim": 16,
                                       "head_dims": (16,)})
    assert row["ms"] > 0 and row["peak_mb"] >= 0


def test_format_scaling_lines_up_models_and_failures():
    rows = [{"model": "centroid_transformer", "n": 512, "ms": 10.0, "peak_mb": 100.0},
            {"model": "self_attention_transformer (full)", "n": 512, "ms": 50.0, "peak_mb": 800.0},
            {"model": "centroid_transformer", "n": 4096, "ms": 80.0, "peak_mb": 700.0},
            {"model": "self_attention_transformer (full)", "n": 4096, "error": "out of memory"}]
    text = bench.format_scaling(rows, batch=8)
    assert "| 512 | 10 | 50 | 5.0x | 100 | 800 | 8.0x |" in text
    assert "| 4096 | 80 | out of memory |  | 700 | out of memory |  |" in text


def _attention_ks(cfg):
    from pointabstract.models import build_model

    net = build_model(cfg.model, **cfg.model_args)
    return [m.k for m in net.modules() if hasattr(m, "k") and hasattr(m, "heads")]


def test_table3_full_attention_row_uses_full_attention_despite_the_preset():
    # demo.yaml sets model.k: 16 for the centroid transformer; the "no downsampling" row is
    # full self-attention, so its k stays None (not 16-NN attention)
    cfg = bench.ablation_config("demo", "self_attention_transformer", 0, overrides=["model.k=16"])
    assert cfg.model_args["k"] is None
    ks = _attention_ks(cfg)
    assert ks and all(k is None for k in ks)
    # the other rows keep the preset's KNN attention
    assert set(_attention_ks(bench.ablation_config("demo", "centroid_transformer", 0))) == {16}
