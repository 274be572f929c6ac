"""The `pointabstract` command end to end on a tiny synthetic set."""

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pointabstract import cli
from pointabstract.cli import main
from pointabstract.data import generate_synthetic
from tests.fixtures import resampled_layout, tiny_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    generate_synthetic(root, train_per_class=3, test_per_class=2, num_points=256, progress=False)
    return root


def _train_demo(root, run, epochs: int, *extra) -> int:
    return main(["train", "demo", *extra, f"data.root={root}", "data.num_points=64", "data.workers=0",
                 f"optim.epochs={epochs}", f"log.out_dir={run}", "log.progress=false",
                 *tiny_model("centroid_transformer")])


@pytest.fixture(scope="module")
def trained(tiny_synthetic, tmp_path_factory):
    """A one-epoch demo run (its folder) and what ``train`` printed."""
    run = tmp_path_factory.mktemp("cli") / "run"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert _train_demo(tiny_synthetic, run, 1) == 0
    return run, out.getvalue()


def test_train_writes_a_checkpoint_and_prints_the_test_accuracy(trained):
    run, out = trained
    assert (run / "last.pt").is_file() and "test overall accuracy" in out


def test_eval_writes_metrics_and_a_report(trained, tmp_path):
    run, _ = trained
    assert main(["eval", str(run / "last.pt"), "--out", str(tmp_path / "report")]) == 0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert metrics["samples"] == 32 and len(metrics["class_names"]) == 16
    assert "![confusion matrix](confusion.png)" in (tmp_path / "report" / "report.md").read_text()


def test_resume_before_the_overrides_trains_on_without_asking(trained, tiny_synthetic, tmp_path):
    # a longer run is not a config change that needs asking
    run = shutil.copytree(trained[0], tmp_path / "run")
    assert _train_demo(tiny_synthetic, run, 2, "--resume") == 0
    assert torch.load(run / "last.pt", weights_only=False)["epoch"] == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a CPU-only machine")
def test_eval_on_cuda_without_cuda_is_one_line(trained, capsys):
    assert main(["eval", str(trained[0] / "last.pt"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --device 'cuda' asked for, but CUDA is not available") or \
        err.startswith("error: device 'cuda' asked for"), err


def test_a_missing_dataset_names_the_command_that_writes_one(tmp_path, capsys):
    assert main(["train", "demo", f"data.root={tmp_path / 'nothing'}", f"log.out_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert "no ModelNet layout found" in err and "pointabstract data synth (writes datasets/synthetic)" in err
    assert f"--out {tmp_path / 'nothing'}" not in err  # never a hint to write into the user's folder


def test_an_unknown_config_key_is_named(capsys):
    _fails(["train", "demo", "optim.lr_rate=3"], r"unknown config key\(s\) \['optim.lr_rate'\]", capsys)


def test_an_unreadable_checkpoint_is_one_line(tmp_path, capsys):
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    _fails(["eval", str(tmp_path / "bad.pt")], r"is not a readable checkpoint", capsys)


def _fails(argv, pattern, capsys, code=2):
    """``main(argv)`` ends with one ``error:`` line matching ``pattern``, no traceback."""
    import re

    assert main(argv) == code
    err = capsys.readouterr().err
    # (progress bars of the data tools may share stderr: look at the lines, split at \r too)
    errors = [line[line.index("error: "):] for line in re.split(r"[\r\n]", err) if "error: " in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert re.search(pattern, errors[0]), err


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("x")
    return path


def test_data_commands_report_user_errors_in_one_line(tmp_path, a_file, capsys):
    mesh = tmp_path / "off" / "ModelNet40" / "chair" / "train" / "chair_0001.off"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("")
    # the error arrives from a worker process of the sampling pool
    _fails(["data", "prepare", str(tmp_path / "off"), "--workers", "2", "--split", "train"],
           r"chair_0001.off: empty file \(no OFF header\)", capsys)
    _fails(["data", "md5", str(tmp_path / "nothing.zip")], r"No such file or directory.*nothing.zip", capsys)
    _fails(["data", "synth", "--out", str(a_file / "synth"), "--train-per-class", "1"], r"a_file", capsys)


def test_train_refuses_bad_values_before_training(tiny_synthetic, tmp_path, a_file, capsys):
    base = ["train", "demo", f"data.root={tiny_synthetic}", "data.workers=0", f"log.out_dir={tmp_path / 'run'}"]
    for override, pattern in [("device=tpu", r"device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
                              ("model.widths=abcd", r"model.widths must be a list like \[.*\], got 'abcd'"),
                              ("model.widths=[a, b, c, d]", r"model.widths must be a list of ints"),
                              ("optim.epochs=0", r"optim.epochs must be a positive int, got 0"),
                              ("optim.epochs=-2", r"optim.epochs must be a positive int, got -2"),
                              ("optim.lr=inf", r"optim.lr must be a positive finite number, got inf"),
                              ("optim.lr=-0.1", r"optim.lr must be a positive finite number, got -0.1"),
                              (f"log.out_dir={a_file / 'run'}", r"log.out_dir .*a_file/run cannot be written"),
                              (f"log.out_dir={a_file}", r"log.out_dir .*a_file is a file, not a folder"),
                              ("log.out_dir=/sys/pointabstract-test", r"log.out_dir /sys/pointabstract-test "
                                                                      r"cannot be written")]:
        _fails([*base, override], pattern, capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a CPU-only machine")
def test_cuda_on_a_cpu_machine_is_one_line(capsys):
    _fails(["train", "demo", "device=cuda"], r"device 'cuda' asked for, but CUDA is not available here", capsys)
    _fails(["bench", "ops", "--device", "cuda"], r"--device 'cuda' asked for, but CUDA is not available", capsys)


def test_bench_ops_checks_arguments_before_running(tmp_path, a_file, capsys):
    _fails(["bench", "ops", "--repeats", "0"], r"--repeats must be a positive int, got 0", capsys)
    _fails(["bench", "ops", "--quick", "--out", str(a_file / "ops.md")], r"--out .*a_file/ops.md", capsys)
    _fails(["bench", "ops", "--quick", "--out", "/sys/pointabstract-test/ops.md"], r"cannot be written", capsys)
    _fails(["bench", "ops", "--quick", "--out", str(tmp_path)], r"is a folder; give a file name", capsys)
    _fails(["bench", "models", "--repeats", "0"], r"--repeats must be a positive int, got 0", capsys)


@pytest.mark.parametrize("content, pattern", [
    (torch.nn.Linear(2, 3).state_dict(), r"is not a pointabstract checkpoint \(a plain state_dict"),
    ({"model": {}, "config": "x", "epoch": 3}, r"is not a pointabstract checkpoint \(a dict, its 'config'"),
    ([1, 2], r"is not a pointabstract checkpoint \(a list")])
def test_a_foreign_checkpoint_is_named(tmp_path, capsys, content, pattern):
    torch.save(content, tmp_path / "foreign.pt")
    _fails(["eval", str(tmp_path / "foreign.pt")], pattern, capsys)


def test_a_missing_checkpoint_is_named(tmp_path, capsys):
    _fails(["eval", str(tmp_path / "missing.pt")], r"checkpoint .*missing.pt does not exist", capsys)


def test_resume_with_nothing_to_resume_is_one_line(tmp_path, capsys):
    _fails(["train", "demo", "--resume", f"log.out_dir={tmp_path / 'none'}", "device=cpu"],
           r"nothing to resume in .*none: no last.pt", capsys)


def test_unknown_arguments_after_resume_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["train", "demo", "--resume", "--bogus"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_bugs_keep_their_traceback(monkeypatch):
    import pointabstract.engine as engine

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(engine, "load_config", broken)
    with pytest.raises(KeyError, match="a bug"):
        main(["train", "demo"])


def test_debug_shows_the_traceback_of_user_errors(monkeypatch):
    monkeypatch.setenv("POINTABSTRACT_DEBUG", "1")
    with pytest.raises(ValueError, match="optim.epochs must be a positive int"):
        main(["train", "demo", "optim.epochs=0"])


def test_compile_notice_names_kernels_missing_from_the_cache(tmp_path, monkeypatch, capsys):
    import types

    from pointabstract import cli

    def kernel(index, signatures=()):
        cache = types.SimpleNamespace(_cache_file=types.SimpleNamespace(_index_path=str(index)))
        return types.SimpleNamespace(_cache=cache, signatures=list(signatures))

    (tmp_path / "cached.nbi").write_text("")
    module = types.ModuleType("fake_kernels")
    module.cached = kernel(tmp_path / "cached.nbi")
    module.fresh = kernel(tmp_path / "fresh.nbi")
    module.loaded = kernel(tmp_path / "loaded.nbi", signatures=["(float32[:],)"])  # compiled in this process
    module.helper = len
    assert cli.uncompiled_kernels([module]) == ["fake_kernels.fresh"]
    assert all(name.startswith("pointabstract.ops.kernels.") for name in cli.uncompiled_kernels())
    monkeypatch.setattr(cli, "uncompiled_kernels", lambda: ["fake_kernels.fresh"])
    monkeypatch.setattr(cli, "KERNEL_COMMANDS", ("train", "eval", "bench", "view"))  # conftest turns it off
    cli._compile_notice("train")
    cli._compile_notice("data")
    assert capsys.readouterr().err == "compiling pointabstract kernels (once per install, up to a minute or two)...\n"


def test_a_missing_optional_dependency_names_the_extra(monkeypatch, capsys):
    from pointabstract import cli

    def no_yaml():
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")

    monkeypatch.setattr(cli, "build_parser", no_yaml)
    assert cli.main(["train", "demo"]) == 2
    assert capsys.readouterr().err == ("error: pointabstract train needs yaml, which is not installed (an "
                                       'optional dependency): pip install "pointabstract[train]"\n')
    monkeypatch.setattr(cli, "build_parser", lambda: (_ for _ in ()).throw(ModuleNotFoundError("x", name="not_ours")))
    with pytest.raises(ModuleNotFoundError):  # not an optional dependency: a real bug
        cli.main(["train", "demo"])


@pytest.mark.parametrize("signum, code, how", [(signal.SIGINT, 130, "interrupted"),
                                               (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_an_interrupted_training_says_what_is_kept_and_how_to_continue(tiny_synthetic, tmp_path, signum, code, how):
    out = tmp_path / "run #1"
    args = ["train", "demo", f"data.root={tiny_synthetic}", f"log.out_dir={out}", "data.num_points=48",
            "data.workers=0", "optim.epochs=50", "log.tensorboard=false", "data.batch_size=4", *tiny_model("centroid_transformer")]
    # a job started in the background of a non-interactive shell inherits SIGINT ignored: restore it
    proc = subprocess.Popen([sys.executable, "-m", "pointabstract.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:  # wait for the first finished epoch
        if line.startswith("epoch 1/"):
            break
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"{how}: {out / 'last.pt'} (epoch ") and " is kept; continue with: pointabstract " \
        "train demo " in last and last.endswith(" --resume") and "'log.out_dir=" in last, last
    assert main(shlex.split(last.split("continue with: pointabstract ")[1])[:-1] + ["optim.epochs=1"]) == 2
@pytest.mark.parametrize("text, pattern", [
    ("model: centroid_transformer\noptim.lr: [0.1\n", r"p.yaml:3: not valid YAML \(expected .*; while parsing a flow "
                                                     r"sequence started at line 2\)"),
    ("", r"p.yaml is empty: a preset must be a mapping"),
    (b"seed: \xff\n", r"p.yaml: not a UTF-8 text file \(byte 0xff at offset 6\)"),
])
def test_bad_presets_are_one_line_and_start_nothing(tmp_path, capsys, monkeypatch, text, pattern):
    monkeypatch.chdir(tmp_path)  # an empty preset used to start a 250-epoch run into runs/train
    preset = tmp_path / "p.yaml"
    preset.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["train", str(preset)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and re.search(pattern, err), err
    assert not (tmp_path / "runs").exists()


def test_an_override_path_keeps_its_hash(tiny_synthetic, tmp_path, capsys):
    out = tmp_path / "exp #1"
    assert main(["train", "demo", f"data.root={tiny_synthetic}", f"log.out_dir={out}", "optim.epochs=1",
                 "data.workers=0", "log.progress=false", "log.tensorboard=false", "device=cpu", *tiny_model("centroid_transformer")]) == 0
    assert (out / "last.pt").is_file() and not (tmp_path / "exp").exists()


@pytest.mark.parametrize("bad_line", ["0.1,0.2,nan,0,0,1", "0.1,0.2"])
def test_a_worker_error_is_the_workers_own_line(tmp_path, bad_line):
    from pointabstract.cli import _one_line
    from pointabstract.data import ModelNet40
    from pointabstract.engine.trainer import ShardSampler, make_loader

    ds = ModelNet40(resampled_layout(tmp_path / "data", bad_line), "train", num_points=32)
    messages = []
    for workers in (0, 2):
        loader = make_loader(ds, ShardSampler(len(ds)), 2, workers)
        with pytest.raises(ValueError) as info:
            list(loader)
        messages.append(_one_line(info.value))
    assert "bathtub_0001.txt" in messages[0] and re.search(r"(line|row) 3\b", messages[0]), messages[0]
    assert messages[1] == messages[0] and "\n" not in messages[1], messages[1]


def test_a_worker_error_quoted_in_another_message_is_unwrapped_too(tmp_path):
    from pointabstract.cli import _one_line
    from pointabstract.data import ModelNet40
    from pointabstract.engine.trainer import ShardSampler, make_loader

    ds = ModelNet40(resampled_layout(tmp_path / "data"), "train", num_points=32)
    with pytest.raises(ValueError) as info:
        list(make_loader(ds, ShardSampler(len(ds)), 2, 2))
    own = ValueError(f"training stopped at epoch 1 ({info.value}); the last good checkpoint is last.pt")
    assert re.fullmatch(r"training stopped at epoch 1 \(.*bathtub_0001.txt: non-finite value \(NaN or Inf\) at "
                        r"line 3\); the last good checkpoint is last.pt", _one_line(own)), _one_line(own)
    assert _one_line(ValueError("Caught nothing here")) == "Caught nothing here"


@pytest.mark.parametrize("argv, module, extras", [
    (["train", "demo"], "h5py", "train"),  # train includes data: one extra to install
    (["eval", "runs/demo/best.pt"], "matplotlib.pyplot", "train"),
    (["bench", "ops"], "tqdm", "train"),
    (["bench", "ops"], "scipy.spatial", "train,backends"),
    (["view", "best.pt", "--png", "a.png"], "open3d", "viz,train"),
    (["view", "best.pt", "--png", "a.png"], "h5py", "viz,train"),
    (["data", "synth", "--level", "hard"], "h5py", "data"),
    (["data", "synth", "--level", "hard"], "scipy", "data,backends"),
    (["data", "info"], "yaml", "data,train"),
    (["--help"], "h5py", "data")])
def test_a_missing_dependency_names_the_extras_of_the_command(argv, module, extras):
    from pointabstract import cli

    err = ModuleNotFoundError(f"No module named {module!r}", name=module)
    message = cli.missing_dependency_message(err, argv)
    command = "this command" if argv[0].startswith("-") else f"pointabstract {argv[0]}"
    assert message == (f"error: {command} needs {module.split('.')[0]}, which is not installed (an optional "
                       f'dependency): pip install "pointabstract[{extras}]"')
    assert cli.missing_dependency_message(ModuleNotFoundError("x", name="numpyy"), argv) is None


_CORE_ONLY = """
import contextlib, io, json, sys
for name in {blocked!r}:
    sys.modules[name] = None  # as on a core-only install: importing it raises ModuleNotFoundError
from pointabstract.cli import main
for argv in {commands!r}:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    print(json.dumps([code, err.getvalue()]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("blocked, expected", [
    # core only: every command stops at its first missing module and names the extras to install
    (list(cli.OPTIONAL), {"data": "data", "train": "train", "eval": "train", "bench": "train", "view": "viz,train"}),
    # data installed, not train: the commands that need train say so
    (["yaml", "matplotlib", "tensorboard", "PIL", "open3d"],
     {"train": "train", "eval": "train", "bench": "train", "view": "viz,train"})])
def test_each_command_on_a_partial_install_names_its_extras(tmp_path, blocked, expected):
    commands = {"data": ["data", "info", str(tmp_path)],
                "train": ["train", "demo", f"data.root={tmp_path}", f"log.out_dir={tmp_path / 'run'}"],
                "eval": ["eval", str(tmp_path / "best.pt")],
                "bench": ["bench", "ops", "--repeats", "1", "--out", str(tmp_path / "ops.md")],
                "view": ["view", str(tmp_path / "best.pt"), "--png", str(tmp_path / "a.png")]}
    script = _CORE_ONLY.format(blocked=blocked, commands=[commands[c] for c in expected])
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]
    for (command, extras), (code, err) in zip(expected.items(), rows, strict=True):
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (command, err)
        assert err.startswith(f"error: pointabstract {command} needs "), (command, err)
        assert err.endswith(f'pip install "pointabstract[{extras}]"\n'), (command, err)


def test_eval_options_of_another_task_are_one_line_naming_option_and_task(tmp_path, capsys):
    from pointabstract.engine import atomic_save, build_task, load_config, to_flat
    from pointabstract.models import MODELS, build_model

    name = "capsule_ae_demo_ca"
    cfg = load_config(None, {"model": name, **{f"model.{k}": v for k, v in MODELS[name].tiny.items()}})
    net = build_model(cfg.model, **{**cfg.model_args, **build_task(cfg).model_args()})
    atomic_save({"model": net.state_dict(), "config": to_flat(cfg), "epoch": 1, "task_state": {}}, tmp_path / "ae.pt")
    for flag, said in [(["--votes", "3"], "votes does not apply to {}, a 'reconstruction' checkpoint (eval options "
                                          "of the 'reconstruction' task: none)"),
                       (["--neighbourhoods"], "the neighbourhoods figure does not apply to {}, a 'reconstruction' "
                                              "checkpoint (figures of the 'reconstruction' task's report: capsules, "
                                              "viewer)")]:
        assert main(["eval", str(tmp_path / "ae.pt"), "--out", str(tmp_path / "eval"), *flag]) == 2
        err = capsys.readouterr().err
        assert err == f"error: {said.format(tmp_path / 'ae.pt')}\n"
    assert not (tmp_path / "eval").exists()  # refused before anything was evaluated or written


def test_train_help_lists_the_presets_and_every_registry_model_with_its_description(capsys):
    from pointabstract.cli import main
    from pointabstract.models import MODELS

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "presets: capsules_demo_ca, capsules_demo_dr, capsules_demo_floor, centroid_transformer_modelnet40, demo," in out
    for name, spec in MODELS.items():
        assert spec.doc and re.search(rf"^  {name} +{re.escape(spec.doc)}$", out, re.M), name


def test_eval_figures_without_open3d_are_one_line_in_the_report(tmp_path, capsys):
    """eval needs the train extra only: a figure or viewer page that needs open3d (not installed)
    becomes a line in the report, as a missing renderer does; other missing modules still raise."""
    from pointabstract.cli import _render_section

    def needs(module):
        def build(run, out):
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)
        return build

    said = 'open3d is not installed (pip install "pointabstract[viz]")'
    assert _render_section("capsule figure", needs("open3d"), None, tmp_path) == (f"_No capsule figure: {said}_", {})
    assert capsys.readouterr().out == f"warning: no capsule figure ({said})\n"
    with pytest.raises(ModuleNotFoundError, match="yaml"):
        _render_section("capsule figure", needs("yaml"), None, tmp_path)


@pytest.mark.parametrize("failure", ["peer gone", "interrupted"])
def test_torchrun_s_sigterm_never_cuts_the_one_line_short(tmp_path, monkeypatch, capsys, failure):
    # torchrun SIGTERMs the other processes when one fails; one arriving while a process writes its
    # own line (here: while it looks up its last checkpoint) made it print a bare "interrupted" instead
    import pointabstract.engine as engine

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")

    def failing(cfg, **kwargs):
        if failure == "peer gone":
            raise RuntimeError("[/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1234")
        raise KeyboardInterrupt

    def load_checkpoint(path):  # the second SIGTERM arrives here
        os.kill(os.getpid(), signal.SIGTERM)
        return {"epoch": 1}

    monkeypatch.setattr(engine, "train", failing)
    monkeypatch.setattr(engine, "load_checkpoint", load_checkpoint)
    code = main(["train", "demo", f"log.out_dir={tmp_path / 'run'}"])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    if failure == "peer gone":
        assert code == 2 and lines[0].startswith("error: process 0 stopped because another training process")
    else:
        assert code == 130 and lines[0].startswith(f"interrupted: {tmp_path / 'run' / 'last.pt'} (epoch 1) is kept")
