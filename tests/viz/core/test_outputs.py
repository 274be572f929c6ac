"""The viewer's output paths (viz/core/outputs.py): the right suffix, a writable place, and never a
file the viewer did not write unless --overwrite; all before anything is loaded or drawn."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pointabstract.viz import cli
from pointabstract.viz.core.html import write_page
from pointabstract.viz.core.outputs import check_output, written_by_viewer
from pointabstract.viz.core.render import save_png


@pytest.mark.parametrize("option, name, message", [
    ("--html", "notes.md", r"--html .*notes.md: the name must end in .html or .htm \(it writes an HTML page\), "
                           r"e.g. notes.html"),
    ("--html", "v.png", r"--html .*v.png: the name must end in .html or .htm"),
    ("--png", "v.html", r"--png .*v.html: the name must end in .png \(it writes a PNG image\), e.g. v.png"),
    ("--figure", "f.jpg", r"--figure .*f.jpg: the name must end in .png"),
    ("--png", "v", r"--png .*v: the name must end in .png \(it writes a PNG image\), e.g. v.png"),
])
def test_a_name_of_another_format_is_refused(tmp_path, option, name, message):
    with pytest.raises(ValueError, match=message):
        check_output(tmp_path / name, option)
    assert not (tmp_path / name).exists()


def test_only_the_viewers_own_files_are_replaced_without_overwrite(tmp_path):
    mine_png = save_png(np.zeros((4, 4, 3), np.uint8), tmp_path / "v.png", backends=["software"])
    mine_html = write_page(tmp_path / "v.html", title="t", data={}, script="")
    assert written_by_viewer(mine_png) and written_by_viewer(mine_html)
    assert check_output(mine_png, "--png") == (mine_png, False)
    assert check_output(mine_html, "--html") == (mine_html, False)
    for name, text in (("w.png", "not an image"), ("p.htm", "<html>my page</html>")):
        (tmp_path / name).write_text(text)
        option = "--html" if name.endswith("htm") else "--png"
        with pytest.raises(ValueError, match=rf"{option} .*{name}: a file that pointabstract view did not write "
                                             r"is there; choose another name, or give --overwrite to replace it"):
            check_output(tmp_path / name, option)
        assert check_output(tmp_path / name, option, overwrite=True) == (tmp_path / name, True)
        assert (tmp_path / name).read_text() == text  # checking changes nothing
    png = tmp_path / "photo.png"
    from PIL import Image

    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(png)  # a PNG, but not one of the viewer's
    assert not written_by_viewer(png)


def test_folders_and_places_that_cannot_be_written(tmp_path):
    with pytest.raises(ValueError, match=r"--png .* is a folder; give a file name such as .*view.png"):
        check_output(tmp_path, "--png")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"--png .*file/v.png: folder .*file cannot be written: Not a directory"):
        check_output(tmp_path / "file" / "v.png", "--png")
    with pytest.raises(ValueError, match=r"--png /proc/v.png: folder /proc cannot be written"):
        check_output("/proc/v.png", "--png")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files and folders")
def test_read_only_files_and_folders(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    save_png(np.zeros((4, 4, 3), np.uint8), folder / "v.png", backends=["software"]).chmod(0o444)
    with pytest.raises(ValueError, match=r"--png .*v.png: the file is read-only"):
        check_output(folder / "v.png", "--png")
    folder.chmod(0o555)
    try:
        with pytest.raises(ValueError, match=r"--png .*w.png: folder .*ro cannot be written: Permission denied"):
            check_output(folder / "w.png", "--png")
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("args, message", [
    (["--html", "{tmp}/notes.md"], "--html {tmp}/notes.md: the name must end in .html or .htm"),
    (["--html", "{tmp}/v.png"], "--html {tmp}/v.png: the name must end in .html or .htm"),
    (["--png", "{tmp}"], "--png {tmp} is a folder"),
    (["--png", "/proc/v.png"], "--png /proc/v.png: folder /proc cannot be written"),
    (["--png", "{tmp}/mine.png"], "--png {tmp}/mine.png: a file that pointabstract view did not write is there"),
])
def test_the_command_refuses_before_loading_anything(tmp_path, capsys, args, message):
    """The checkpoint is not even a checkpoint: the path is refused first, in one line."""
    (tmp_path / "notes.md").write_text("# my notes")
    (tmp_path / "mine.png").write_text("mine")
    (tmp_path / "ckpt").write_text("not a checkpoint")
    assert cli.main([str(tmp_path / "ckpt"), *[a.format(tmp=tmp_path) for a in args]]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()] and err.startswith(f"error: {message.format(tmp=tmp_path)}"), err
    assert (tmp_path / "notes.md").read_text() == "# my notes" and (tmp_path / "mine.png").read_text() == "mine"
