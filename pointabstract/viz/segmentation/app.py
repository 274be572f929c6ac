"""``pointabstract view`` on a part-segmentation checkpoint: the state, its keys and its ``--png``.

:class:`SegViewerState` holds what is shown (shape, tree level, layout) and builds the panels; it
needs no window and is what the tests drive. It is ``tasks.STATES["part_segmentation"]``: the view
command, the window (:func:`pointabstract.viz.core.window.run_viewer`, with :data:`SEG_KEYMAP`) and
the ``--figure`` writer reach it through the same per-task tables as the other tasks' views.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ... import _validate as V
from ..core.window import WINDOW_KEYS
from .scenes import LAYOUTS, SegPanel, segmentation_panels, side_by_side
from .session import SegSession

__all__ = ["SEG_KEYMAP", "SegScene", "SegViewerState", "render_state_png"]

# key token -> (GLFW key code, what it does); letters are pressed without shift
SEG_KEYMAP = {
    "]": (ord("]"), "tree level up: larger clusters (towards the root)"),
    "[": (ord("["), "tree level down: smaller clusters"),
    "right": (262, "next shape"),
    "left": (263, "previous shape"),
    "V": (ord("V"), f"next layout {LAYOUTS} (all: true | predicted | tree level)"),
    **WINDOW_KEYS,
}


class SegScene:
    """What the window shows: all panels side by side in one scene."""

    def __init__(self, panels: list[SegPanel]):
        self.panels = panels
        self.geometries = side_by_side(panels)


class SegViewerState:
    """What the segmentation viewer shows; every change goes through :meth:`press`.

    Args:
        session: the loaded segmenter and dataset.
        index: shape of the split.
        level: tree level of the cluster panel in [1, R] (default: R - 2, about 16 clusters with
            the Sequoia defaults; see :func:`~.segmentation_figures.default_levels`).
        layout: one of :data:`~.segmentation_scenes.LAYOUTS`.
    """

    KEYMAP = SEG_KEYMAP  # the window's key map (the per-task viewer protocol of viz/app.py)
    TITLE = "true vs predicted parts, tree clusters"

    def __init__(self, session: SegSession, *, index: int = 0, level: int | None = None, layout: str = "all"):
        V.check_choice("layout", layout, LAYOUTS)
        self.session, self.layout = session, layout
        self.messages: list[str] = []
        self._load(index)
        if level is not None:
            self.sample.clusters_at(level)  # validates it
        self.level = self._default_level() if level is None else int(level)

    @classmethod
    def from_args(cls, session: SegSession, args: argparse.Namespace) -> SegViewerState:
        """The state ``pointabstract view`` asks for (``--index``, ``--level``, ``--layout``);
        ``--color`` is refused (the panels' colourings are fixed: parts, errors, clusters)."""
        if getattr(args, "color", None) is not None:
            raise ValueError("--color does not apply to a part-segmentation checkpoint (its panels show the "
                             "true parts, the predicted parts and the tree's clusters; --layout "
                             f"{'|'.join(LAYOUTS)} picks which)")
        return cls(session, index=args.index, level=getattr(args, "level", None),
                   layout=getattr(args, "layout", None) or "all")

    def _default_level(self) -> int:
        from .figures import default_levels

        return default_levels(self.sample.top_level)[0]

    def _load(self, index: int) -> None:
        self.sample = self.session.sample(index)
        self.index = index
        if hasattr(self, "level") and self.level > self.sample.top_level:
            self.messages.append(f"this shape's tree has {self.sample.top_level} levels: showing the root")
            self.level = self.sample.top_level

    def press(self, key: str) -> str:
        """Apply one key of :data:`SEG_KEYMAP` (not S / H, which need the window); returns the status."""
        actions = {"]": lambda: self._set_level(self.level + 1), "[": lambda: self._set_level(self.level - 1),
                   "right": lambda: self._load((self.index + 1) % len(self.session)),
                   "left": lambda: self._load((self.index - 1) % len(self.session)),
                   "V": self._next_layout}
        V.check_choice("key", key, sorted(actions))
        actions[key]()
        return self.status()

    def _next_layout(self) -> None:
        self.layout = LAYOUTS[(LAYOUTS.index(self.layout) + 1) % len(LAYOUTS)]

    def _set_level(self, level: int) -> None:
        top = self.sample.top_level
        if not 1 <= level <= top:
            self.messages.append(f"level stays {self.level}: levels run from 1 (smallest groups) to {top} "
                                 "(root)")
            return
        self.level = level

    def panels(self, *, point_size: float = 6.0) -> list[SegPanel]:
        return segmentation_panels(self.sample, level=self.level, layout=self.layout, point_size=point_size)

    def scene(self, *, point_size: float = 6.0) -> SegScene:
        return SegScene(self.panels(point_size=point_size))

    def screenshot_name(self, number: int) -> str:
        return f"view{number:02d}_shape{self.index}_level{self.level}_{self.layout}.png"

    def status(self) -> str:
        s = self.sample
        notes = "".join(f"\n  note: {msg}" for msg in self.messages)
        self.messages.clear()
        return (f"shape {s.title} | tree level {self.level}/{s.top_level} ({s.clusters_text(self.level)}, "
                f"{s.tree_note()}) | layout {self.layout}{notes}")


def render_state_png(state: SegViewerState, path: str | Path, *, width: int = 1280, height: int = 720,
                     backend: str = "auto") -> Path:
    """The state's panels (one camera), titled, with the part legend, as one PNG that fits within
    ``width`` x ``height`` pixels (square panels as large as the titles leave room for)."""
    from ..core.figure_compose import TITLE_SPACE, titled_row_png
    from ..core.panel_titles import figure_title
    from .figures import segmentation_images

    columns = len(state.panels()) + 1  # + the legend
    size = int(max(64, min(height - TITLE_SPACE, width // columns)))

    def draw(renderer):
        images, titles, _ = segmentation_images([state.sample], levels=[state.level], layout=state.layout,
                                                renderer=renderer)
        return images[0], titles[0]

    return titled_row_png(path, draw, panel=(size, size), row_label=state.sample.title,
                          title=figure_title(state.session), backend=backend)
