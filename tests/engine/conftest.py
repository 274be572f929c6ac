"""A tiny ModelNet40-HDF5 layout (3 easy classes) and tiny run overrides for engine tests."""

import pytest

from tests.fixtures import tiny_model, write_tiny_modelnet


@pytest.fixture
def tiny_data(tmp_path):
    write_tiny_modelnet(tmp_path / "data")
    return tmp_path / "data"


@pytest.fixture
def tiny_overrides(tiny_data, tmp_path):
    return [f"data.root={tiny_data}", "data.num_points=48", "data.batch_size=8", "data.eval_batch_size=12",
            "data.workers=0", "optim.epochs=2", f"log.out_dir={tmp_path / 'run'}", "log.progress=false",
            "log.tensorboard=false", "device=cpu", *tiny_model("centroid_transformer")]
