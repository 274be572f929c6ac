"""Interoperability with other libraries; import the submodule you need (none is imported here).

- :mod:`pointabstract.interop.pyg`: drop-ins for PyTorch Geometric's ``fps``, ``knn``,
  ``knn_graph``, ``radius``, ``radius_graph`` (torch only).
- :mod:`pointabstract.interop.pyg_ops`: make PyG's own layers use them (needs torch_geometric).
- :mod:`pointabstract.interop.pyg_data`: sample / batch dicts <-> PyG ``Data`` / ``Batch``.
- :mod:`pointabstract.interop.pyg_dataset`: our datasets <-> PyG datasets, the transform adapter.
- :mod:`pointabstract.interop.model_input`: a PyG ``Data`` / ``Batch`` as a model's input.
- :mod:`pointabstract.interop.open3d`: sample dicts <-> ``open3d.geometry.PointCloud``.
- :mod:`pointabstract.interop.trimesh`: a ``trimesh.Trimesh`` -> a sampled point cloud.
"""

__all__: list[str] = []
