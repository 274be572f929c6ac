"""The built-in synthetic dataset: procedural part-labelled shapes, the writer, the baseline.

=====================  ==========================================================
module                 what
=====================  ==========================================================
``shapes_primitives``  meshes from primitives, lathes, tubes, extrusions; ``PartMesh``
``shapes_*``           one builder per ShapeNetPart category (furniture, objects, vehicles)
``shapes``             the builder table and ``build_shape`` (whole-shape variation)
``surface``            area-weighted point sampling on triangle meshes
``hard_*``             the ``hard`` level's family builders (furniture, objects, vehicles)
``hard``               its 40-class table and ``sample_hard_shape``
``nuisances``          scan nuisances: partial view, density, broken pieces, noise, outliers
``generator``          ``generate``: both levels, written in the HDF5 layouts
``baseline``           a non-learned 1-NN classifier: how hard is the set without learning?
=====================  ==========================================================

Names are loaded on first use, so :mod:`.surface` imports without the generator's h5py.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "evaluate_baseline": "baseline", "CLASS_NAMES": "generator", "LEVELS": "generator",
    "generate": "generator", "level_classes": "generator", "sample_shape": "generator",
    "HARD_CLASS_NAMES": "hard", "HARD_CLASSES": "hard", "sample_hard_shape": "hard",
    "NUISANCES": "nuisances", "Nuisances": "nuisances", "apply_nuisances": "nuisances",
    "hidden_point_removal": "nuisances", "build_shape": "shapes", "sample_surface": "surface",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
