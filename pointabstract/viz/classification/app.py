"""The classification viewer's state and key map (the Open3D window: :mod:`..core.window`).

:class:`ViewerState` holds what is shown of a classification run (sample, block, K, query
point, colouring, layout) and builds the scene; it needs no window and is what the tests drive.
It offers what :mod:`pointabstract.viz.tasks` asks of every task's state; ``P`` (pick a point)
is offered by the classification state alone.
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V
from ...ops import farthest_point_sample, knn
from ..core.colors import (
    GREY,
    ScalarLegend,
    class_palette,
    contrasting_highlight,
    label_colors,
    part_palette,
    scalar_colors,
)
from ..core.panel_titles import neighbourhood_titles
from ..core.window import WINDOW_KEYS
from ..core.window import key_help as window_key_help
from .scenes import LAYOUTS, NeighbourhoodScene, default_k, neighbourhood_scene
from .session import ViewSession

__all__ = ["COLORINGS", "KEYMAP", "ViewerState", "key_help"]

COLORINGS = ("neighbours", "predicted", "true", "part", "distance")
# key token -> (GLFW key code, what it does); letters are pressed without shift
KEYMAP = {
    "N": (ord("N"), "next query point (well-spread order)"),
    "B": (ord("B"), "previous query point"),
    "P": (ord("P"), "pick the query point with the mouse: shift+click a point, then close with Q"),
    "]": (ord("]"), "next block"),
    "[": (ord("["), "previous block"),
    ".": (ord("."), "K + 5 neighbours"),
    ",": (ord(","), "K - 5 neighbours"),
    "right": (262, "next sample"),
    "left": (263, "previous sample"),
    "C": (ord("C"), f"next colouring {COLORINGS}"),
    "V": (ord("V"), f"next layout {LAYOUTS}"),
    **WINDOW_KEYS,
}


def key_help(keymap: dict | None = None) -> str:
    """The key map (default: the classification viewer's) as printable lines."""
    return window_key_help(KEYMAP if keymap is None else keymap)


class ViewerState:
    """What the viewer shows; every change goes through :meth:`press`.

    Args:
        session: the loaded model and dataset.
        index: sample of the split.
        block: block index (default: the second centroid-attention block).
        k: neighbours per space (clamped to the block's point count, with a message); None: the
            paper's proportion for each block (:func:`~pointabstract.viz.classification.scenes.default_k`).
        coloring: one of :data:`COLORINGS`.
        layout: one of :data:`pointabstract.viz.classification.scenes.LAYOUTS`.
    """

    KEYMAP = KEYMAP
    TITLE = "feature-space vs 3D neighbours"

    def __init__(self, session: ViewSession, *, index: int = 0, block: int | None = None,
                 k: int | None = None, coloring: str = "neighbours", layout: str = "side_by_side"):
        V.check_choice("coloring", coloring, COLORINGS)
        V.check_choice("layout", layout, LAYOUTS)
        V.check_int("k", k, low=1, allow_none=True)
        self.session, self.coloring, self.layout, self.k_wanted = session, coloring, layout, k
        self.messages: list[str] = []
        self._load(index)
        if not self._available(coloring):
            needs = "per-point part" if coloring == "part" else "true class"
            raise ValueError(f"coloring {coloring!r} needs {needs} labels, which this dataset does not have")
        nblocks = len(self.sample.blocks)
        if block is not None:
            V.check_int_in("block", block, -nblocks, nblocks - 1, note=" for this model")
        self._set_block(self.sample.default_block if block is None else block % nblocks)

    @classmethod
    def from_args(cls, session: ViewSession, args) -> ViewerState:
        """The state asked for by ``pointabstract view`` arguments (``--index --block --k --color
        --layout --query``)."""
        state = cls(session, index=args.index, block=args.block, k=args.k,
                    coloring=args.color or "neighbours", layout=args.layout or "side_by_side")
        if args.query is not None:
            state.set_query(args.query)
        return state

    # --- state changes -------------------------------------------------------------------------
    def press(self, key: str) -> str:
        """Apply one key of :data:`KEYMAP` (not S / P / H, which need the window); returns the status."""
        actions = {"N": lambda: self._step_query(1), "B": lambda: self._step_query(-1),
                   "]": lambda: self._set_block((self.block + 1) % len(self.sample.blocks)),
                   "[": lambda: self._set_block((self.block - 1) % len(self.sample.blocks)),
                   ".": lambda: self._set_k(self.k + 5), ",": lambda: self._set_k(max(1, self.k - 5)),
                   "right": lambda: self._load((self.index + 1) % len(self.session), keep_block=True),
                   "left": lambda: self._load((self.index - 1) % len(self.session), keep_block=True),
                   "C": self._next_coloring,
                   "V": lambda: setattr(self, "layout", LAYOUTS[(LAYOUTS.index(self.layout) + 1) % 3])}
        V.check_choice("key", key, sorted(actions))
        actions[key]()
        return self.status()

    def set_query(self, query: int) -> str:
        m = self.points()[0].shape[0]
        V.check_int_in("query", query, 0, m - 1)
        self.query = int(query)
        return self.status()

    def _load(self, index: int, keep_block: bool = False) -> None:
        self.sample = self.session.sample(index)
        self.index = index
        if keep_block:
            self._set_block(self.block, keep_query=False)

    def _set_block(self, block: int, *, keep_query: bool = True) -> None:
        old = self.points()[0][self.query] if keep_query and hasattr(self, "query") else None
        self.block = block
        pos, _ = self.points()
        self.order = farthest_point_sample(pos[None], pos.shape[0])[0].tolist()  # spread-out cycle
        # a new block keeps the query where it was: the new block's point nearest the old query
        self.query = self.order[0] if old is None else int(knn(old.view(1, 1, 3), pos[None], 1)[1][0, 0, 0])
        self._set_k(self.k_wanted)

    def _set_k(self, k: int | None) -> None:
        """K for the current block: ``k``, clamped to its M points (and said so); None: default_k(M)."""
        m = self.points()[0].shape[0]
        if k is not None and k > m:
            self.messages.append(f"K = {k} is more than block {self.block}'s {m} points: using K = {m}")
        self.k_wanted, self.k = k, default_k(m) if k is None else min(k, m)  # the wish outlives the block

    def _step_query(self, step: int) -> None:
        pos = self.order.index(self.query) if self.query in self.order else 0
        self.query = self.order[(pos + step) % len(self.order)]

    def _next_coloring(self) -> None:
        i = COLORINGS.index(self.coloring)
        for j in range(1, len(COLORINGS) + 1):
            candidate = COLORINGS[(i + j) % len(COLORINGS)]
            if self._available(candidate):
                self.coloring = candidate
                return

    def _available(self, coloring: str) -> bool:
        known = {"true": self.sample.label is not None, "part": self.sample.part is not None}
        return known.get(coloring, True)

    # --- what is shown -------------------------------------------------------------------------
    def points(self):
        """pos (M, 3) and features (M, C) of the current block."""
        return self.sample.block(self.block)

    def scene(self, *, point_size: float = 7.0, layout: str | None = None) -> NeighbourhoodScene:
        """The scene shown; ``layout`` overrides the state's layout (e.g. one panel of it)."""
        layout = self.layout if layout is None else layout
        V.check_choice("layout", layout, LAYOUTS)
        pos, feats = self.points()
        base, xyz_base, legend = self._base_colors(pos, feats)
        context = self.sample.pos if pos.shape[0] < self.sample.pos.shape[0] else None
        return neighbourhood_scene(pos, feats, self.query, k=self.k, layout=layout, base_colors=base,
                                   xyz_base_colors=xyz_base, highlight=self.coloring != "distance",
                                   context=context, point_size=point_size, legend=legend,
                                   highlight_color=contrasting_highlight(base)[1])

    def highlight_name(self) -> str:
        """The colour the neighbours are painted in, by name (red, unless the colouring's own
        colours are close to it: :func:`~pointabstract.viz.core.colors.contrasting_highlight`)."""
        return contrasting_highlight(self._base_colors(*self.points())[0])[0]

    def _base_colors(self, pos, feats) -> tuple[np.ndarray | tuple, np.ndarray | None, ScalarLegend | None]:
        m, ncls = pos.shape[0], len(self.session.class_names)
        if self.coloring == "predicted" or (self.coloring == "true" and self.sample.label is not None):
            cls = self.sample.pred if self.coloring == "predicted" else self.sample.label
            return label_colors(np.full(m, cls), class_palette(max(ncls, cls + 1))), None, None
        if self.coloring == "part" and self.sample.part is not None:
            parts = self.sample.labels_at(self.block, self.sample.part)  # (M,) global part ids
            return label_colors(parts, part_palette()), None, None
        if self.coloring == "distance":
            f = (feats - feats[self.query]).norm(dim=1).numpy()
            x = (pos - pos[self.query]).norm(dim=1).numpy()
            label = "distance to the query / largest (feature | 3D)"
            fc, legend = scalar_colors(f / max(f.max(), 1e-12), vmin=0.0, vmax=1.0, label=label)
            xc, _ = scalar_colors(x / max(x.max(), 1e-12), vmin=0.0, vmax=1.0)
            return fc, xc, legend
        return GREY, None, None

    def panel_layouts(self) -> tuple[str, ...]:
        """The shown layout's panels, left to right (``side_by_side``: ``feature``, then ``xyz``)."""
        return ("feature", "xyz") if self.layout == "side_by_side" else (self.layout,)

    def panel_scenes(self, *, point_size: float = 7.0) -> list[NeighbourhoodScene]:
        """The :meth:`panel_layouts` as separate single-panel scenes, for rendering each on its own."""
        return [self.scene(point_size=point_size, layout=layout) for layout in self.panel_layouts()]

    def panel_titles(self) -> list[str]:
        """One title per panel of :meth:`panel_scenes` (:func:`~.panel_titles.neighbourhood_titles`)."""
        return neighbourhood_titles(self)

    def panel_camera(self) -> None:
        """None: each ``--png`` panel gets its own fitted default camera."""
        return None

    def screenshot_name(self, number: int) -> str:
        """File name of the ``number``-th screenshot of this state."""
        return (f"view{number:02d}_sample{self.index}_block{self.block}_query{self.query}_k{self.k}"
                f"_{self.coloring}.png")

    def status(self) -> str:
        s = self.sample
        m = self.points()[0].shape[0]
        notes = "".join(f"\n  note: {msg}" for msg in self.messages)
        self.messages.clear()
        return (f"sample {s.title} | block {self.block} ({m} points) | K = {self.k} | query {self.query} | "
                f"colouring {self.coloring} | layout {self.layout}{notes}")
