"""Peer implementations the ops benchmark times against pointabstract.ops.

Each peer is called directly, the way a user of that library would call it (libraries that
work on one cloud at a time are looped over the batch), and returns nothing: only its time
matters here; agreement of results is the tests' job. A peer whose library does not import
in this process is simply absent.
"""

from __future__ import annotations

import importlib

import numpy as np
import torch


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except Exception:  # missing, or a broken binary (open3d without libGL)
        return False
    return True


# --- farthest point sampling: (pos (B, N, 3) float32 tensor, m) -> None ----------------------

def fps_fpsample(pos, m):
    import fpsample

    pts = pos.numpy()
    for b in range(pts.shape[0]):
        fpsample.fps_sampling(pts[b], m, start_idx=0)


def fps_fpsample_bucket(pos, m):
    import fpsample

    pts = pos.numpy()
    h = 7 if pts.shape[1] > 50_000 else 5  # fpsample's advice: larger h for larger clouds
    for b in range(pts.shape[0]):
        fpsample.bucket_fps_kdline_sampling(pts[b], m, h=h, start_idx=0)


def fps_torch_loop(pos, m):
    """The FPS loop found in most PyTorch PointNet++ ports: one argmax per step."""
    batch, n, _ = pos.shape
    mind = torch.full((batch, n), float("inf"), device=pos.device)
    last = torch.zeros(batch, dtype=torch.long, device=pos.device)
    rows = torch.arange(batch, device=pos.device)
    for _ in range(m):
        d = ((pos - pos[rows, last][:, None]) ** 2).sum(-1)
        mind = torch.minimum(mind, d)
        last = mind.argmax(-1)


def fps_torch_cluster(pos, m):
    import torch_cluster

    batch, n, _ = pos.shape
    torch_cluster.fps(pos.reshape(-1, 3), torch.arange(batch, device=pos.device).repeat_interleave(n),
                      ratio=(m - 0.5) / n, random_start=False)


def fps_pytorch3d(pos, m):
    from pytorch3d.ops import sample_farthest_points

    sample_farthest_points(pos, K=m)


# --- KNN: (query (B, M, C), ref (B, N, C), k) -> None ----------------------------------------

def knn_pykdtree(query, ref, k):
    from pykdtree.kdtree import KDTree

    q, r = query.numpy(), ref.numpy()
    for b in range(q.shape[0]):
        KDTree(r[b]).query(q[b], k=k, sqr_dists=True)


def knn_scipy(query, ref, k):
    from scipy.spatial import cKDTree

    q, r = query.numpy(), ref.numpy()
    for b in range(q.shape[0]):
        cKDTree(r[b]).query(q[b], k=k, workers=torch.get_num_threads())


def knn_open3d(query, ref, k):
    import open3d as o3d

    q, r = query.numpy().astype(np.float64), ref.numpy().astype(np.float64)
    for b in range(q.shape[0]):
        tree = o3d.geometry.KDTreeFlann(r[b].T)
        for p in q[b]:
            tree.search_knn_vector_3d(p, k)


def knn_dense_torch(query, ref, k):
    """cdist + topk, chunked over queries to bound memory at 2^26 distances."""
    step = max(1, (1 << 26) // (query.shape[0] * ref.shape[1]))
    for s in range(0, query.shape[1], step):
        torch.cdist(query[:, s : s + step], ref).topk(k, dim=-1, largest=False)


def knn_torch_cluster(query, ref, k):
    import torch_cluster

    batch, m, c = query.shape
    n = ref.shape[1]
    rows = torch.arange(batch, device=ref.device)
    torch_cluster.knn(ref.reshape(-1, c), query.reshape(-1, c), k,
                      rows.repeat_interleave(n), rows.repeat_interleave(m))


def knn_pytorch3d(query, ref, k):
    from pytorch3d.ops import knn_points

    knn_points(query, ref, K=k)


# --- Chamfer forward + backward: (x (B, N, 3), y (B, M, 3)) -> None ----------------------------

def _tree_chamfer(x, y, search):
    """Nearest indices from a KD-tree library, then a differentiable gather in torch."""
    x = x.clone().requires_grad_()
    y = y.clone().requires_grad_()
    xs, ys = x.detach().numpy(), y.detach().numpy()
    ix = torch.from_numpy(np.stack([search(ys[b], xs[b]) for b in range(len(xs))]).astype(np.int64))
    iy = torch.from_numpy(np.stack([search(xs[b], ys[b]) for b in range(len(xs))]).astype(np.int64))
    rows = torch.arange(x.shape[0])[:, None]
    dx = ((x - y[rows, ix]) ** 2).sum(-1).mean(1)
    dy = ((y - x[rows, iy]) ** 2).sum(-1).mean(1)
    (dx + dy).mean().backward()


def chamfer_scipy(x, y):
    from scipy.spatial import cKDTree

    _tree_chamfer(x, y, lambda r, q: cKDTree(r).query(q, k=1, workers=torch.get_num_threads())[1])


def chamfer_pykdtree(x, y):
    from pykdtree.kdtree import KDTree

    _tree_chamfer(x, y, lambda r, q: KDTree(r).query(q, k=1)[1])


def chamfer_dense_torch(x, y):
    """cdist, squared, min both ways: the one-liner whose gradient breaks at zero distance."""
    x = x.clone().requires_grad_()
    y = y.clone().requires_grad_()
    d = torch.cdist(x, y) ** 2
    (d.min(2).values.mean(1) + d.min(1).values.mean(1)).mean().backward()


def chamfer_pytorch3d(x, y):
    from pytorch3d.loss import chamfer_distance

    x = x.clone().requires_grad_()
    y = y.clone().requires_grad_()
    chamfer_distance(x, y)[0].backward()


# name -> (function, module that must import); the benchmark keeps the importable ones
FPS = {"fpsample": (fps_fpsample, "fpsample"),
       # approximate (QuickFPS buckets): compared with our exact FPS, which is never slower
       "fpsample bucket (approx.)": (fps_fpsample_bucket, "fpsample"),
       "torch-cluster": (fps_torch_cluster, "torch_cluster"),
       "pytorch3d": (fps_pytorch3d, "pytorch3d"), "torch loop": (fps_torch_loop, "torch")}
KNN = {"pykdtree": (knn_pykdtree, "pykdtree"), "scipy cKDTree": (knn_scipy, "scipy"),
       "open3d KDTreeFlann": (knn_open3d, "open3d"), "torch-cluster": (knn_torch_cluster, "torch_cluster"),
       "pytorch3d": (knn_pytorch3d, "pytorch3d"), "dense torch": (knn_dense_torch, "torch")}
KNN_FEATURES = {"torch-cluster": (knn_torch_cluster, "torch_cluster"),
                "pytorch3d": (knn_pytorch3d, "pytorch3d"), "dense torch": (knn_dense_torch, "torch")}
CHAMFER = {"scipy cKDTree": (chamfer_scipy, "scipy"), "pykdtree": (chamfer_pykdtree, "pykdtree"),
           "pytorch3d": (chamfer_pytorch3d, "pytorch3d"), "dense torch": (chamfer_dense_torch, "torch")}


# peers that take CUDA tensors (the others are CPU libraries)
CUDA_CAPABLE = {"torch-cluster", "pytorch3d", "torch loop", "dense torch"}


def available(table: dict, device: str = "cpu") -> dict:
    """The peers of ``table`` whose library imports here and runs on ``device``."""
    on_cuda = torch.device(device).type == "cuda"
    return {name: fn for name, (fn, module) in table.items()
            if _has(module) and (not on_cuda or name in CUDA_CAPABLE)}


def unavailable(table: dict, device: str = "cpu") -> list[str]:
    """The peers of ``table`` that would run on ``device`` but whose library does not import here."""
    on_cuda = torch.device(device).type == "cuda"
    return [name for name, (_, module) in table.items()
            if not _has(module) and (not on_cuda or name in CUDA_CAPABLE)]
