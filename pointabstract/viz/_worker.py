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
    """Render requests from ``conn`` until it closes (runs in the worker process)."""
    impl = Offscreen(width, height) if backend == "offscreen" else Legacy(width, height)
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
