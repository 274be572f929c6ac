"""The render worker: runs Open3D's native renderers in a process of their own.

Imported by the worker process only (and by :mod:`.render` for the names), so it needs
nothing but numpy and Open3D.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["Legacy", "Offscreen", "worker"]


def _rebuild(items: list[dict]) -> list[dict]:
    import open3d as o3d

    out = []
    for item in items:
        v3 = o3d.utility.Vector3dVector
        if item["kind"] == "mesh":
            g = o3d.geometry.TriangleMesh(v3(item["vertices"]), o3d.utility.Vector3iVector(item["triangles"]))
            if len(item["colors"]):
                g.vertex_colors = v3(item["colors"])
        else:
            g = o3d.geometry.PointCloud(v3(item["points"]))
            if len(item["colors"]):
                g.colors = v3(item["colors"])
        out.append({"geometry": g, "name": item["name"], "point_size": item["point_size"]})
    return out


def worker(conn, backend: str, width: int, height: int) -> None:
    """Render requests from ``conn`` until it closes (runs in the worker process).

    First reports ``("ready", seconds)`` once the renderer exists and has drawn a small warm-up
    scene (a point cloud and a mesh: the first frame compiles the shaders, which takes seconds
    on a CPU), or ``("error", why)``; then answers each request with ``("ok", image)`` or
    ``("error", why)``. The caller times the two phases separately.
    """
    import time

    start = time.perf_counter()
    try:
        impl = Offscreen(width, height) if backend == "offscreen" else Legacy(width, height)
        impl.render(_rebuild(_WARM_UP), *_warm_up_camera(width, height), np.ones(3))
    except Exception as err:  # reported to the caller, who falls back to another backend
        conn.send(("error", f"{type(err).__name__}: {err}"))
        os._exit(0)
    conn.send(("ready", time.perf_counter() - start))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            break
        try:
            conn.send(("ok", impl.render(_rebuild(request[0]), *request[1:])))
        except Exception as err:  # reported to the caller
            conn.send(("error", f"{type(err).__name__}: {err}"))
    os._exit(0)  # skip native destructors (they too were seen to hang)


_WARM_UP = [  # a red 3-point cloud and a green triangle, in front of the warm-up camera
    {"kind": "points", "name": "warm/points", "point_size": 5.0,
     "points": np.array([[0.0, 0.0, 0.0], [0.2, 0.1, 0.0], [-0.2, -0.1, 0.0]]),
     "colors": np.eye(3)[[0, 0, 0]]},
    {"kind": "mesh", "name": "warm/mesh", "point_size": 5.0, "vertices": np.array(
        [[-0.5, -0.5, -0.1], [0.5, -0.5, -0.1], [0.0, 0.5, -0.1]]), "triangles": np.array([[0, 1, 2]]),
     "colors": np.eye(3)[[1, 1, 1]]},
]


def _warm_up_camera(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """intrinsic (3, 3), extrinsic (4, 4) of a camera 3 units in front of the warm-up scene."""
    f = height / (2 * np.tan(np.radians(15)))
    intrinsic = np.array([[f, 0, width / 2 - 0.5], [0, f, height / 2 - 0.5], [0, 0, 1]])
    extrinsic = np.diag([1.0, -1.0, -1.0, 1.0])  # looking down -z from +z, y up on screen
    extrinsic[2, 3] = 3.0
    return intrinsic, extrinsic


class Offscreen:
    def __init__(self, width: int, height: int):
        from open3d.visualization import rendering

        self.rendering = rendering
        self.width, self.height = width, height
        self.renderer = rendering.OffscreenRenderer(width, height)

    def render(self, drawables, intrinsic, extrinsic, background) -> np.ndarray:
        scene = self.renderer.scene
        scene.clear_geometry()
        for d in drawables:
            material = self.rendering.MaterialRecord()
            material.shader = "defaultUnlit"  # flat colours: pixels hold exactly the given colours
            material.point_size = float(d["point_size"])
            scene.add_geometry(d["name"], d["geometry"], material)
        scene.set_background([*background, 1.0])
        self.renderer.setup_camera(intrinsic, extrinsic, self.width, self.height)  # after adding (near/far)
        scene.view.set_post_processing(False)  # no tone mapping, dithering or anti-aliasing
        return np.array(self.renderer.render_to_image())[..., :3]

    def close(self) -> None:
        self.renderer = None


class Legacy:
    def __init__(self, width: int, height: int):
        import open3d as o3d

        self.o3d = o3d
        self.width, self.height = width, height
        self.vis = o3d.visualization.Visualizer()
        if not self.vis.create_window(width=width, height=height, visible=False):
            raise RuntimeError("the legacy Open3D visualiser could not open a window "
                              f"(DISPLAY={os.environ.get('DISPLAY')!r}; EGL headless failed too)")

    def render(self, drawables, intrinsic, extrinsic, background) -> np.ndarray:
        vis = self.vis
        vis.clear_geometries()
        for d in drawables:
            vis.add_geometry(d["geometry"], reset_bounding_box=True)
        opt = vis.get_render_option()
        opt.point_size = float(max(d["point_size"] for d in drawables))  # one size for all here
        opt.background_color = np.asarray(background, float)
        opt.light_on = False  # unlit meshes: exact colours, as in the offscreen backend
        params = self.o3d.camera.PinholeCameraParameters()
        params.intrinsic = self.o3d.camera.PinholeCameraIntrinsic(self.width, self.height, intrinsic)
        params.extrinsic = extrinsic
        vis.get_view_control().convert_from_pinhole_camera_parameters(params, allow_arbitrary=True)
        vis.poll_events()
        vis.update_renderer()
        image = np.asarray(vis.capture_screen_float_buffer(do_render=True))
        return (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)

    def close(self) -> None:
        if self.vis is not None:
            self.vis.destroy_window()
            self.vis = None
