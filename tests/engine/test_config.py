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


def test_bad_values_and_files(tmp_path):
    with pytest.raises(ValueError, match="optim.epochs must be a int, got 'ten'"):
        load_config(None, ["optim.epochs=ten"])
    with pytest.raises(ValueError, match="log.progress must be true or false"):
        load_config(None, ["log.progress=3"])
    with pytest.raises(ValueError, match="must look like key=value"):
        load_config(None, ["lr"])
    nested = tmp_path / "n.yaml"
    nested.write_text("optim:\n  lr: 0.1\n")
    with pytest.raises(ValueError, match="one flat mapping"):
        load_config(nested)
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
