"""Geometry ops on batched point clouds: sampling, neighbours, trees, Chamfer, gathers.

Shapes follow the glossary: ``pos`` (B, N, 3), features (B, N, C), indices int64, ragged
batches as ``lengths`` (B,). Every op validates its inputs, has a slow ``*_naive`` reference
used by the tests, and (where it dispatches) a ``backend`` argument; see :func:`backends`.
"""

from ._backend import backends
from .ball_query import ball_query, ball_query_naive
from .chamfer import chamfer_distance, chamfer_distance_naive
from .fps import farthest_point_sample, farthest_point_sample_naive
from .gather import gather_points, knn_interpolate, nearest_upsample
from .knn import knn, knn_naive
from .knn_graph import knn_graph
from .reduce import max_over, max_over_naive
from .sampling import KMeansResult, kmeans_sample, random_sample
from .tree import PointTree, TreeLevel, build_tree, build_tree_naive
from .tree_tables import TreeTables, nearest_siblings, node_positions, tree_tables, tree_tables_naive

__all__ = [
    "TreeTables", "nearest_siblings", "node_positions", "tree_tables", "tree_tables_naive",
    "KMeansResult",
    "PointTree",
    "TreeLevel",
    "backends",
    "ball_query",
    "ball_query_naive",
    "build_tree",
    "build_tree_naive",
    "chamfer_distance",
    "chamfer_distance_naive",
    "farthest_point_sample",
    "farthest_point_sample_naive",
    "gather_points",
    "kmeans_sample",
    "knn",
    "knn_graph",
    "knn_interpolate",
    "knn_naive",
    "max_over",
    "max_over_naive",
    "nearest_upsample",
    "random_sample",
]
