"""Preset files: finding them (a path, a name in pointabstract/configs, a registry model name),
reading them (one mapping, nested mappings flattened to the dotted keys) and parsing
``key=value`` overrides. :mod:`pointabstract.engine.config` turns the flat keys into a RunConfig.
"""

from __future__ import annotations

from pathlib import Path

from ..models import MODELS

__all__ = ["PRESETS", "flatten_preset", "model_preset", "parse_override", "preset_path", "read_preset"]

PRESETS = Path(__file__).resolve().parents[1] / "configs"


def preset_path(name_or_path: str) -> Path:
    """A preset by file path, or by name in pointabstract/configs (``demo`` -> demo.yaml)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    candidate = PRESETS / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    raise FileNotFoundError(f"no config file {name_or_path!r} and no preset of that name; presets: {names}; "
                            f"or a model name (pointabstract.models.MODELS)")


def model_preset(name: str) -> dict:
    """``pointabstract train capsule_ae_small_ca``: a flat config for a registry model name with
    everything else at its defaults, the task's usual dataset (the first of its ``datasets``) under
    ``data.root`` and outputs in ``runs/<name>``."""
    from .tasks import default_dataset

    return {"model": name, "data.dataset": default_dataset(MODELS[name].task), "log.out_dir": f"runs/{name}"}


def read_preset(path: Path) -> dict:
    """The flat mapping of a preset file (nested mappings flattened, :func:`flatten_preset`);
    one-line ValueErrors naming the file (and line) for text that is not UTF-8, not YAML, empty,
    or not a mapping of 'key: value' lines."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file (byte 0x{err.object[err.start]:02x} at offset "
                         f"{err.start})") from None
    import yaml  # the train extra; imported here so that naming tasks (the CLI's parser) needs none

    try:
        tree = yaml.load(text, Loader=_unique_keys_loader(yaml))  # a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
        if context and start is not None and start is not mark:
            problem += f"; {context} started at line {start.line + 1}"
        raise ValueError(f"{where}: not valid YAML ({problem})") from None
    if tree is None:
        raise ValueError(f"{path} is empty: a preset must be a mapping of 'key: value' lines "
                         f"(at least 'model: <name>')")
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: a preset must be a mapping of 'key: value' lines, got a "
                         f"{type(tree).__name__}")
    return flatten_preset(tree, source=str(path))


def _unique_keys_loader(yaml):
    """A SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last one
    silently: ``model: x`` then ``model: {k: 16}`` would drop the model's name)."""
    class UniqueKeys(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)):
                    continue  # an unhashable key: flatten_preset names it
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeys


# under these sections a nested ``name`` is the section's own top-level key (model: {name: x} is model: x)
_NAMED = ("model", "task")


def flatten_preset(tree: dict, *, source: str = "preset") -> dict:
    """A preset's mapping with nested mappings flattened to dotted keys.

    ``{"data": {"root": "x"}, "optim.lr": 0.1}`` -> ``{"data.root": "x", "optim.lr": 0.1}``;
    ``{"model": {"name": "m", "k": 16}}`` -> ``{"model": "m", "model.k": 16}`` (likewise ``task``).
    Flat and nested spellings may be mixed; a key reached twice, a key that is not text and an
    empty section are one-line ValueErrors naming ``source`` and the nested path.
    """
    flat, where = {}, {}
    _flatten_into(tree, (), flat, where, source)
    return flat


def _flatten_into(tree: dict, path: tuple, flat: dict, where: dict, source: str) -> None:
    for key, value in tree.items():
        spelled = ": ".join((*path, str(key)))  # the nested path as the file spells it
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"{source}: key {key!r} at {spelled!r} must be text like 'data' or 'root'")
        if isinstance(value, dict):
            if not value:
                raise ValueError(f"{source}: {spelled!r} is an empty mapping; give its keys or leave it out")
            _flatten_into(value, (*path, key), flat, where, source)
            continue
        dotted = ".".join((*path, key))
        if len(path) == 1 and path[0] in _NAMED and key == "name":
            dotted = path[0]  # model: {name: x} names the model
        if dotted in flat:
            raise ValueError(f"{source}: key {dotted!r} is given twice (as {where[dotted]!r} and as "
                             f"{spelled!r}); keep one")
        flat[dotted], where[dotted] = value, spelled


def parse_override(key: str, text: str):
    """The value of a ``key=value`` override: YAML's reading when it is a number, a bool, null
    or a list (``3e-4``, ``true``, ``[0.8, 1.2]``) or a quoted string, else ``text`` exactly as
    typed (stripped), so that paths keep a ``#`` or ``:`` (YAML would read ``runs/exp #1`` as
    ``runs/exp`` plus a comment, ``a: b`` as a mapping). A ``#`` that YAML would take for a
    comment after a typed value is refused rather than dropped."""
    import yaml

    raw = text.strip()
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw  # e.g. '[1, 2' or 'a: b: c': the text itself; the field's type check names it
    quoted = raw[:1] in ("'", '"') and isinstance(value, str)
    if not quoted and (isinstance(value, (str, dict)) or not isinstance(value, (bool, int, float, list))
                       and value is not None):
        return raw  # text, a mapping, a date: what was typed
    if "#" in raw and "#" not in str(value):
        dropped = raw[raw.index("#"):]
        raise ValueError(f"override {key}={raw!r}: '#' would start a YAML comment and drop "
                         f"' {dropped}'; quote the value or leave the comment out")
    return value
