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
"""

from .baseline import evaluate_baseline
from .generator import CLASS_NAMES, LEVELS, generate, level_classes, sample_shape
from .hard import HARD_CLASS_NAMES, HARD_CLASSES, sample_hard_shape
from .nuisances import NUISANCES, Nuisances, apply_nuisances, hidden_point_removal
from .shapes import build_shape
from .surface import sample_surface

__all__ = ["CLASS_NAMES", "HARD_CLASSES", "HARD_CLASS_NAMES", "LEVELS", "NUISANCES", "Nuisances",
           "apply_nuisances", "build_shape", "evaluate_baseline", "generate", "hidden_point_removal",
           "level_classes", "sample_hard_shape", "sample_shape", "sample_surface"]
