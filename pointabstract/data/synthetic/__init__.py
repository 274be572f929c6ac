"""The built-in synthetic dataset: procedural part-labelled shapes, the writer, the baseline.

=====================  ==========================================================
module                 what
=====================  ==========================================================
``shapes_primitives``  meshes from primitives, lathes, tubes, extrusions; ``PartMesh``
``shapes_*``           one builder per ShapeNetPart category (furniture, objects, vehicles)
``shapes``             the builder table and ``build_shape`` (whole-shape variation)
``surface``            area-weighted point sampling on triangle meshes
``generator``          ``generate``: sampling, noise, and writing the HDF5 layouts
``baseline``           a non-learned 1-NN classifier: how hard is the set without learning?
=====================  ==========================================================
"""

from .baseline import evaluate_baseline
from .generator import CLASS_NAMES, generate, sample_shape
from .shapes import build_shape
from .surface import sample_surface

__all__ = ["CLASS_NAMES", "build_shape", "evaluate_baseline", "generate", "sample_shape", "sample_surface"]
