import re

import pytest
import yaml

from pointabstract.engine import load_config, to_flat


def test_preset_plus_overrides(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("model: ct_kmeans\noptim.lr: 0.01\ndata.num_points: 256\nmodel.k: 8\n")
    cfg = load_config(preset, ["optim.lr=3e-4", "model.widths=[8, 16, 16, 32]", "seed=3"])
    assert cfg.model == "ct_kmeans" and cfg.optim.lr == 3e-4 and cfg.seed == 3
    assert cfg.data.num_points == 256 and cfg.model_args == {"k": 8, "widths": (8, 16, 16, 32)}
    model_cfg = cfg.model_config()
    assert model_cfg.init == "kmeans" and model_cfg.k == 8 and model_cfg.widths == (8, 16, 16, 32)


def test_named_presets_load():
    for name in ("demo", "centroid_transformer_modelnet40", "self_attention_modelnet40"):
        cfg = load_config(name)
        assert cfg.model in ("centroid_transformer", "self_attention_transformer")


def test_unknown_keys_are_named():
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['optim.learning_rate'\]"):
        load_config(None, ["optim.learning_rate=0.1"])
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['depth'\] for model 'centroid_transformer'"):
        load_config(None, ["model.depth=3"])
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['batch'\]"):
        load_config(None, ["batch=3"])
    with pytest.raises(ValueError, match="unknown model 'pointnet'"):
        load_config(None, ["model=pointnet"])


@pytest.mark.parametrize("override, message", [
    ("seed=-1", r"seed must be an int >= 0, got -1"),
    ("data.num_points=0", r"data.num_points must be a positive int, got 0"),
    ("data.workers=-1", r"data.workers must be an int >= 0, got -1"),
    ("data.test_fraction=1.0", r"data.test_fraction must be a finite number in \(0.0, 1.0\), got 1.0"),
    ("optim.max_steps=-1", r"optim.max_steps must be an int >= 0 \(0: no step budget\), got -1"),
    ("optim.optimizer=sgd", r"optim.optimizer must be one of \['adam', 'adamw'\], got 'sgd'"),
    ("optim.schedule=linear", r"optim.schedule must be one of \['step', 'cosine'\], got 'linear'"),
    ("optim.weight_decay=-0.5", r"optim.weight_decay must be a finite number in \[0.0, inf\), got -0.5"),
    ("optim.step_size=0", r"optim.step_size must be a positive int, got 0"),
    ("optim.gamma=0", r"optim.gamma must be a finite number in \(0.0, 1.0\], got 0.0"),
    ("optim.grad_clip=nan", r"optim.grad_clip must be a finite number in \[0.0, inf\), got nan"),
    ("log.eval_every=0", r"log.eval_every must be a positive int, got 0"),
    ("log.out_dir=' '", r"log.out_dir must be a folder, got ' '"),
])
def test_config_values_are_checked_in_one_wording(override, message):
    with pytest.raises(ValueError, match=message):
        load_config(None, [override])


def test_bad_values_and_files(tmp_path):
    with pytest.raises(ValueError, match="optim.epochs must be an int, got 'ten'"):
        load_config(None, ["optim.epochs=ten"])
    with pytest.raises(ValueError, match="log.progress must be true or false"):
        load_config(None, ["log.progress=3"])
    with pytest.raises(ValueError, match="must look like key=value"):
        load_config(None, ["lr"])
    listed = tmp_path / "l.yaml"
    listed.write_text("- optim.lr: 0.1\n")
    with pytest.raises(ValueError, match=r"l.yaml: a preset must be a mapping of 'key: value' lines, got a list"):
        load_config(listed)
    with pytest.raises(FileNotFoundError, match="no config file 'nope' and no preset of that name"):
        load_config("nope")


def test_flat_round_trip():
    cfg = load_config("demo", ["optim.lr=0.005"])
    flat = to_flat(cfg)
    again = load_config(None, yaml.safe_load(yaml.safe_dump(flat)))
    assert to_flat(again) == flat


def test_a_registry_model_name_is_a_preset_with_its_tasks_dataset():
    cfg = load_config("capsule_ae_small_ca", ["optim.epochs=2"])
    assert (cfg.model, cfg.task, cfg.data.dataset) == ("capsule_ae_small_ca", "reconstruction", "shapenet_part")
    assert cfg.log.out_dir == "runs/capsule_ae_small_ca" and cfg.optim.epochs == 2
    seg = load_config("sequoia_seg")
    assert (seg.task, seg.data.dataset) == ("part_segmentation", "shapenet_part")
    assert load_config("centroid_transformer").data.dataset == "modelnet40"
    # a preset file of the same name would win; an unknown name lists both kinds
    with pytest.raises(FileNotFoundError, match="or a model name"):
        load_config("capsule_ae_nope")


@pytest.mark.parametrize("value", ["runs/exp #1", "runs/a:b", "C:/x", "a # b", "runs/a: b", "runs/2024-01-01"])
def test_override_values_keep_hash_and_colon(value):
    # read as YAML, ' #1' was a comment (runs/exp #1 -> runs/exp) and 'a: b' a mapping
    assert load_config(None, [f"log.out_dir={value}"]).log.out_dir == value


def test_typed_overrides_parse_as_before():
    cfg = load_config(None, ["model=sequoia_seg_demo", "optim.lr=3e-4", "optim.epochs=7", "log.progress=false",
                             "task.scale=[0.8,1.2]", "task.categories=[Airplane, Chair]", "optim.grad_clip=1",
                             "seed=0x10", "log.out_dir='quoted #1'", 'data.root="a: b"'])
    assert (cfg.optim.lr, cfg.optim.epochs, cfg.log.progress, cfg.optim.grad_clip, cfg.seed) == \
        (3e-4, 7, False, 1.0, 16)
    assert cfg.task_args == {"scale": (0.8, 1.2), "categories": ("Airplane", "Chair")}
    assert (cfg.log.out_dir, cfg.data.root) == ("quoted #1", "a: b")
    assert load_config(None, ["model.k=null"]).model_config().k is None


def test_a_comment_after_a_typed_override_is_refused():
    with pytest.raises(ValueError, match=r"override optim.epochs='3 # three': '#' would start a YAML comment "
                                         r"and drop ' # three'; quote the value"):
        load_config(None, ["optim.epochs=3 # three"])


def test_preset_syntax_and_encoding_errors_are_one_line(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: centroid_transformer\noptim.lr: [0.1\nseed: 1\n")
    with pytest.raises(ValueError, match=r"^.*broken.yaml:\d+: not valid YAML \(.*\)$") as info:
        load_config(broken)
    assert "\n" not in str(info.value)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("log.out_dir: runs/caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.yaml: not a UTF-8 text file \(byte 0xe9 at offset 21\)"):
        load_config(latin)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "null\n"])
def test_an_empty_preset_is_refused(tmp_path, text):
    empty = tmp_path / "empty.yaml"
    empty.write_text(text)
    with pytest.raises(ValueError, match=r"empty.yaml is empty: a preset must be a mapping of 'key: value' "
                                         r"lines \(at least 'model: <name>'\)"):
        load_config(empty)


_SEG, _CLS = "sequoia_seg_demo", "centroid_transformer"  # a part-segmentation and a classification model


@pytest.mark.parametrize("model, override, message", [
    (_SEG, "task.scale=[0.5]", r"task.scale must be a list of 2 numbers \[low, high\], got \[0.5\]"),
    (_SEG, "task.scale=[0.5, 1, 2]", r"task.scale must be a list of 2 numbers \[low, high\], got \[0.5, 1, 2\]"),
    (_SEG, "task.scale=[1.5, 0.5]", r"task.scale must satisfy 0 < low <= high, got \[1.5, 0.5\]"),
    (_SEG, "task.categories=[Foo]", r"task.categories must name ShapeNetPart categories \(\['Airplane', .*\]\), "
                                    r"got unknown \['Foo'\]"),
    (_SEG, "task.shift=-1", r"task.shift must be a finite number in \[0.0, inf\), got -1.0"),
    (_SEG, "task.votes=0", r"task.votes must be a positive int, got 0"),
    (_SEG, "task.layout=v1", r"task.layout must be one of \['', 'normal', 'v0', 'hdf5'\] \(''\: detect\), got 'v1'"),
    (_CLS, "task.label_smoothing=1.0", r"task.label_smoothing must be a finite number in \[0.0, 1.0\), got 1.0"),
    (_CLS, "task.votes=0", r"task.votes must be a positive int, got 0"),
    (_CLS, "task.augment=flip", r"task.augment must be one of \[.*\], got 'flip'"),
])
def test_wrong_task_settings_name_the_key(model, override, message):
    from pointabstract.engine.tasks import build_task

    cfg = load_config(None, [f"model={model}", override])
    with pytest.raises(ValueError, match=message):
        build_task(cfg)


@pytest.mark.parametrize("model, override", [("capsule_ae_demo_dr", "model.encoder_dims=[-1]"),
                                             ("centroid_transformer", "model.head_dims=[0]"),
                                             ("sequoia_cls", "model.head_dims=[64, 0]"),
                                             ("centroid_transformer", "model.widths=[8, 16, 0, 32]")])
def test_layer_sizes_below_one_are_refused(model, override):
    # encoder_dims=[-1] was a RuntimeError traceback from torch, head_dims=[0] built empty layers
    key, value = override.split("=")
    with pytest.raises(ValueError, match=rf"{key} must list layer sizes >= 1 like \[.*\], got {re.escape(value)}"):
        load_config(None, [f"model={model}", override])


def test_empty_head_is_still_allowed():
    assert load_config(None, ["model.head_dims=[]"]).model_config().head_dims == ()


def _nested_demo() -> str:
    """pointabstract/configs/demo.yaml written as a tree (the Hydra / Pointcept / mmengine habit)."""
    return """
model:
  name: centroid_transformer
  widths: [32, 64, 64, 128]
  heads: 4
  k: 16
  fuse_dim: 128
  head_dims: [128, 64]
  dropout: 0.3
task:
  name: classification
  augment: scale_translate
seed: 0
data:
  dataset: modelnet40
  root: datasets/synthetic
  num_points: 256
  batch_size: 32
  workers: 2
optim: {epochs: 3, optimizer: adamw, lr: 0.002, weight_decay: 0.01, schedule: cosine}
log:
  out_dir: runs/demo
"""


def test_a_nested_preset_is_the_flat_preset(tmp_path):
    nested = tmp_path / "nested.yaml"
    nested.write_text(_nested_demo())
    assert to_flat(load_config(nested)) == to_flat(load_config("demo"))
    # flat and nested spellings mix; overrides still win; a nested dict of overrides reads alike
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("model: centroid_transformer\nmodel.k: 8\noptim:\n  lr: 0.5\n")
    cfg = load_config(mixed, ["optim.lr=0.25"])
    assert (cfg.model_config().k, cfg.optim.lr) == (8, 0.25)
    assert to_flat(load_config(None, {"model": {"name": "centroid_transformer", "k": 8}, "optim": {"lr": 0.25}})) \
        == to_flat(cfg)


@pytest.mark.parametrize("text, message", [
    ("optim:\n  lrr: 0.1\n", r"unknown config key\(s\) \['optim.lrr'\]"),
    ("optim:\n  epochs: ten\n", r"optim.epochs must be an int, got 'ten'"),
    ("data:\n  root:\n    deeper: x\n", r"unknown config key\(s\) \['data.root.deeper'\]"),
    ("data:\n  root: a\ndata.root: b\n",
     r"p.yaml: key 'data.root' is given twice \(as 'data: root' and as 'data.root'\); keep one"),
    ("model: centroid_transformer\nmodel:\n  k: 8\n",
     r"p.yaml:2: not valid YAML \(key 'model' is given twice in one mapping\)"),
    ("model: centroid_transformer\nmodel:\n  name: self_attention\n",
     r"p.yaml:2: not valid YAML \(key 'model' is given twice in one mapping\)"),
    ("model.k: 8\nmodel:\n  k: 16\n", r"p.yaml: key 'model.k' is given twice \(as 'model.k' and as 'model: k'\)"),
    ("data: {}\n", r"p.yaml: 'data' is an empty mapping; give its keys or leave it out"),
    ("data:\n  1: x\n", r"p.yaml: key 1 at 'data: 1' must be text like 'data' or 'root'"),
])
def test_nested_preset_errors_are_one_line_with_the_nested_path(tmp_path, text, message):
    preset = tmp_path / "p.yaml"
    preset.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_config(preset)
    assert "\n" not in str(info.value)
