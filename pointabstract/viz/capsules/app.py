"""The capsule viewer's state and key map: input and reconstruction of a capsule autoencoder.

:class:`CapsuleViewerState` is what the window shows for a ``reconstruction`` checkpoint (see
:data:`pointabstract.viz.tasks.STATES`): a shape of the split, its reconstruction, and one latent
capsule highlighted, every capsule coloured, or the capsules grouped by majority part
(:mod:`.scenes`). Like the classification viewer's state it needs no window and
changes only through :meth:`~CapsuleViewerState.press`.
"""

from __future__ import annotations

from ... import _validate as V
from ..core.panel_titles import capsule_titles
from ..core.window import WINDOW_KEYS
from .scenes import COLORINGS, LAYOUTS, CapsuleScene, FramedCamera, capsule_scene, shared_camera
from .session import CapsuleSession

__all__ = ["KEYMAP", "CapsuleViewerState"]

# key token -> (GLFW key code, what it does); the same keys as the classification viewer's where
# they do the same thing
KEYMAP = {
    "N": (ord("N"), "next capsule (grouped by majority part; shows it: colouring 'capsule')"),
    "B": (ord("B"), "previous capsule"),
    "right": (262, "next sample"),
    "left": (263, "previous sample"),
    "C": (ord("C"), f"next colouring {COLORINGS}"),
    "V": (ord("V"), f"next layout {LAYOUTS}"),
    **WINDOW_KEYS,
}


class CapsuleViewerState:
    """What the capsule viewer shows; every change goes through :meth:`press`.

    Args:
        session: the loaded autoencoder and dataset.
        index: sample of the split.
        capsule: the highlighted capsule (default: the first in :meth:`CapsuleSample.capsule_order`).
        coloring: one of :data:`~pointabstract.viz.capsules.scenes.COLORINGS` (default ``capsule``).
        layout: one of :data:`~pointabstract.viz.capsules.scenes.LAYOUTS` (default ``side_by_side``).
    """

    KEYMAP = KEYMAP
    TITLE = "input vs reconstruction, by latent capsule"

    def __init__(self, session: CapsuleSession, *, index: int = 0, capsule: int | None = None,
                 coloring: str | None = None, layout: str | None = None):
        coloring = "capsule" if coloring is None else coloring
        layout = "side_by_side" if layout is None else layout
        V.check_choice("coloring", coloring, COLORINGS, note=" for an autoencoder")
        V.check_choice("layout", layout, LAYOUTS, note=" for an autoencoder")
        self.session, self.coloring, self.layout = session, coloring, layout
        self._load(index)
        if coloring == "parts" and self.sample.part is None:
            raise ValueError("coloring 'parts' needs per-point part labels (data.dataset=shapenet_part), "
                             "which this dataset does not have")
        self.capsule = (self.sample.capsule_order()[0] if capsule is None
                        else self.sample.check_capsule(capsule))

    @classmethod
    def from_args(cls, session: CapsuleSession, args) -> CapsuleViewerState:
        """The state asked for by ``pointabstract view`` arguments (``--index --capsule --color
        --layout``)."""
        return cls(session, index=args.index, capsule=args.capsule, coloring=args.color, layout=args.layout)

    # --- state changes -------------------------------------------------------------------------
    def press(self, key: str) -> str:
        """Apply one key of :data:`KEYMAP` (not S / H, which need the window); returns the status."""
        n = len(self.session)
        actions = {"N": lambda: self._step_capsule(1), "B": lambda: self._step_capsule(-1),
                   "right": lambda: self._load((self.index + 1) % n),
                   "left": lambda: self._load((self.index - 1) % n),
                   "C": self._next_coloring,
                   "V": lambda: setattr(self, "layout",
                                        LAYOUTS[(LAYOUTS.index(self.layout) + 1) % len(LAYOUTS)])}
        V.check_choice("key", key, sorted(actions))
        actions[key]()
        return self.status()

    def set_capsule(self, capsule: int) -> str:
        self.capsule = self.sample.check_capsule(capsule)
        return self.status()

    def _load(self, index: int) -> None:
        self.sample = self.session.sample(index)  # the same capsule number stays highlighted
        self.index = index

    def _step_capsule(self, step: int) -> None:
        order = self.sample.capsule_order()
        self.capsule = order[(order.index(self.capsule) + step) % len(order)]
        self.coloring = "capsule"

    def _next_coloring(self) -> None:
        choices = [c for c in COLORINGS if c != "parts" or self.sample.part is not None]
        self.coloring = choices[(choices.index(self.coloring) + 1) % len(choices)]

    # --- what is shown -------------------------------------------------------------------------
    def scene(self, *, point_size: float = 6.0, layout: str | None = None) -> CapsuleScene:
        """The scene shown in the window (``layout`` overrides the state's)."""
        return capsule_scene(self.sample, coloring=self.coloring, capsule=self.capsule,
                             layout=self.layout if layout is None else layout, point_size=point_size)

    def panel_layouts(self) -> tuple[str, ...]:
        """The shown layout's panels, left to right (``side_by_side``: the input, then the reconstruction)."""
        return ("input", "reconstruction") if self.layout == "side_by_side" else (self.layout,)

    def panel_scenes(self, *, point_size: float = 6.0) -> list[CapsuleScene]:
        """The :meth:`panel_layouts` as single-panel scenes, to be drawn through :meth:`panel_camera`."""
        return [self.scene(point_size=point_size, layout=layout) for layout in self.panel_layouts()]

    def panel_titles(self) -> list[str]:
        """One title per panel of :meth:`panel_scenes`: input or reconstruction, and what the
        colours mean (:func:`~.panel_titles.capsule_titles`)."""
        return capsule_titles(self)

    def panel_camera(self) -> FramedCamera:
        """The one camera of every panel: facing the input, framing input and reconstruction."""
        return shared_camera(self.sample.pos, self.sample.points)

    def status(self) -> str:
        s = self.sample
        shown = {"capsule": s.describe_capsule(self.capsule),
                 "capsules": f"all {s.num_capsules} capsules",
                 "parts": f"capsules by majority part: {s.describe_groups()}"}[self.coloring]
        purity = "" if s.purity is None else f" | part purity {s.purity:.3f}"
        return (f"sample {s.title}{purity} | {shown} | colouring {self.coloring} | layout {self.layout}")

    def screenshot_name(self, number: int) -> str:
        """File name of the ``number``-th screenshot of this state."""
        what = f"capsule{self.capsule}" if self.coloring == "capsule" else self.coloring
        return f"view{number:02d}_sample{self.index}_{what}_{self.layout}.png"
