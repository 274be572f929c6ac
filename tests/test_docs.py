"""The README and docs/ stay usable: a short README, pages that link to files and
headings that exist, and commands and paths that still exist in the code."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 260

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines, at most {README_MAX_LINES}: move a section to docs/"


def test_readme_quickstart_is_exactly_the_two_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_point_to_files_and_headings_that_exist(page):
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
            continue
        if anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {_rel(file)}")
    assert not broken, f"{_rel(page)}: " + "; ".join(broken)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = set(), [ROOT / "README.md"]
    while todo:  # follow links between markdown pages, starting at the README
        page = todo.pop()
        for target in _links(page):
            path = target.partition("#")[0]
            file = (page.parent / path).resolve()
            if path.endswith(".md") and file.exists() and file not in seen:
                seen.add(file)
                todo.append(file)
    orphans = [_rel(p) for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in seen]
    assert not orphans, f"docs pages no link leads to from the README: {orphans}"


def _named_paths(page: Path) -> set[str]:
    """Repository paths a page names in backticks (without placeholders such as <task> or *; not
    datasets/..., which holds generated data)."""
    found = set()
    for token in re.findall(r"`([^`\s]+)`", page.read_text()):
        token = token.split("::")[0].rstrip(".,:;")
        if re.match(r"(pointabstract|tests|tools|docs|viz|\.ci)/", token) and \
                not re.search(r"[<>*{}|]", token):
            found.add(token)
    return found


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_paths_named_in_backticks_exist(page):
    # a path may be written from the package down (`viz/tasks.py` for pointabstract/viz/tasks.py)
    missing = sorted(p for p in _named_paths(page)
                     if not (ROOT / p).exists() and not (ROOT / "pointabstract" / p).exists())
    assert not missing, f"{_rel(page)} names paths that do not exist: {missing}"


def _commands(pattern: str) -> set[str]:
    return {name for page in PAGES for name in re.findall(pattern, page.read_text())}


def test_bench_commands_named_in_the_docs_exist():
    from pointabstract.bench import BENCHES

    named = _commands(r"pointabstract bench ([a-z_]+)")
    assert named, "no `pointabstract bench NAME` found: the pattern is stale"
    assert named <= set(BENCHES), f"unknown benchmarks named in the docs: {sorted(named - set(BENCHES))}"


def test_train_targets_named_in_the_docs_are_presets_or_models():
    from pointabstract.engine.config import PRESETS
    from pointabstract.models import MODELS

    named = _commands(r"pointabstract(?:\.cli)? train ([a-z][a-z0-9_]*)")
    assert named, "no `pointabstract train NAME` found: the pattern is stale"
    known = {p.stem for p in PRESETS.glob("*.yaml")} | set(MODELS)
    assert named <= known, f"unknown presets / models named in the docs: {sorted(named - known)}"


def test_docs_pictures_stay_small():
    big = [f"{_rel(p)} ({p.stat().st_size:,} bytes)" for p in (ROOT / "docs" / "img").iterdir()
           if p.stat().st_size > 2**20]
    assert not big, f"pictures over 1 MiB in docs/img (save them with a 256-colour palette): {big}"
