"""The OpenGL scene renderer: RGB, metric depth and prim ids in one pass per camera.

A level rig of cameras at one eye (the 12-view panorama) is drawn once through a few wide
views and looked up ray by ray (:mod:`vlnverse.sim.gl.panorama`; ``panorama="one_pass"``,
the default).

The whole scene is uploaded once (one vertex buffer, one draw call); a camera is a view
matrix, a movable object a row of the ``poses`` texture. Depth is the depth buffer
linearised to metres (distance to the image plane); ids are ``prim index + 1`` written to
an integer colour attachment. See :mod:`vlnverse.sim.gl.textures` for appearance and
:mod:`vlnverse.sim.gl.lighting` for the lights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.scene.types import Scene
from vlnverse.sim.camera import view_matrix
from vlnverse.sim.gl import programs, shaders
from vlnverse.sim.gl.context import current_context, finish
from vlnverse.sim.gl.lighting import LIGHT_SOFTNESS, scene_lighting
from vlnverse.sim.gl.panorama import PANORAMA_MODES, RigRenderer, rig_key, worth_it
from vlnverse.sim.gl.reproject import Triangles
from vlnverse.sim.gl.textures import MATERIALS, TILE_METRES, prim_materials, texture_layers
from vlnverse.sim.types import CameraFrame, CameraRequest

#: Light everywhere before the room lights, and the exposure before tone mapping.
AMBIENT, EXPOSURE = 0.3, 0.8
#: Linear colour of what no geometry covers (a pale sky).
BACKGROUND = (0.80, 0.85, 0.92)
VERTEX_FORMAT, ATTRIBUTES = shaders.VERTEX_FORMAT, shaders.ATTRIBUTES


def scene_geometry(scene: Scene, bodies: Sequence[tuple[int, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """Every prim's triangles in drawing order: vertices (T, 3, 3) relative to their body,
    each triangle's body row (0: static geometry, else 1, 2, … in ``bodies`` order) and prim index.

    ``bodies`` lists each movable body as ``(object index, centre)``.
    """
    body_of = {object_index: (row, np.asarray(centre)) for row, (object_index, centre) in enumerate(bodies, 1)}
    counts = [len(range(*p.triangle_slice.indices(len(scene.triangles)))) for p in scene.prims]
    places = [body_of.get(p.object_index, (0, np.zeros(3))) if p.movable else (0, np.zeros(3)) for p in scene.prims]
    rows = np.repeat([row for row, _ in places], counts)
    offsets = np.repeat(np.array([centre for _, centre in places]).reshape(-1, 3), counts, axis=0)
    triangles = scene.triangles[np.concatenate([np.arange(len(scene.triangles))[p.triangle_slice] for p in scene.prims])]
    return triangles - offsets[:, None, :], rows, np.repeat(np.arange(len(scene.prims)), counts)


def vertex_data(scene: Scene, geometry: tuple[np.ndarray, ...]) -> bytes:
    """Interleaved vertices (see ``VERTEX_FORMAT``) of the :func:`scene_geometry`, flat-shaded;
    each carries its body's pose row and its prim index + 1."""
    triangles, rows, prims = geometry
    classes = prim_materials(scene)
    counts = np.bincount(prims, minlength=len(scene.prims))
    colours = np.repeat(np.array([p.color for p in scene.prims], dtype=np.float64).reshape(-1, 3), counts, axis=0)
    kinds = [(MATERIALS.index(kind), 1.0 / TILE_METRES[kind]) for kind in classes]
    materials = np.repeat(np.array(kinds, dtype=np.float64).reshape(-1, 2), counts, axis=0)
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.where(length > 1e-12, normals / np.maximum(length, 1e-12), [0.0, 0.0, 1.0])
    floats = np.concatenate([triangles, np.repeat(normals[:, None], 3, axis=1),
                             np.repeat(colours[:, None], 3, axis=1),
                             np.repeat(materials[:, None], 3, axis=1)], axis=2).astype(np.float32)
    ints = np.repeat(np.stack([rows, prims + 1], axis=1)[:, None], 3, axis=1)
    return np.concatenate([floats, ints.astype(np.int32).view(np.float32)], axis=2).tobytes()


def projection_matrix(request: CameraRequest) -> np.ndarray:
    """OpenGL perspective projection of the request, with +Y down so rows read top-down.

    Pixel ``(u, v)`` sees the ray through ``((u - W/2) / f, (v - H/2) / f)``, as the camera's
    ``intrinsics()`` say with pixel centres at integer coordinates; TinyRenderer samples
    the same rays. (OpenGL samples pixel centres at half-integers: hence the half-pixel shift.)
    """
    fx = 1.0 / np.tan(np.radians(request.hfov_deg) / 2.0)
    fy = fx * request.width / request.height
    n, f = request.near, request.far
    return np.array([[fx, 0, -1.0 / request.width, 0], [0, -fy, 1.0 / request.height, 0],
                     [0, 0, (f + n) / (n - f), 2 * f * n / (n - f)], [0, 0, -1, 0]])


def linear_depth(buffer: np.ndarray, near: float, far: float) -> np.ndarray:
    """Depth-buffer values in [0, 1] → distance to the image plane in metres (float32).

    ``buffer`` is overwritten (the conversion runs in place).
    """
    buffer *= np.float32(near - far)
    buffer += np.float32(far)
    return np.divide(np.float32(far * near), buffer, out=buffer)



def _write_uniforms(program: Any, settings: dict[str, Any]) -> None:
    """Set the ``settings`` the program declares (bytes are written as arrays)."""
    for name, value in settings.items():
        if name in program:
            if isinstance(value, bytes):
                program[name].write(value)
            else:
                program[name].value = value


def _padded(rows: np.ndarray, slots: int, width: int) -> bytes:
    """``rows`` (N, width) as the bytes of a uniform array of ``slots`` entries, zeros after them."""
    array = np.zeros((slots, width), rows.dtype)
    array[:len(rows)] = rows.reshape(len(rows), width)
    return array.tobytes()


def _material_array(ctx: Any) -> Any:
    """The material detail maps as a mipmapped, repeating texture array (read-only: shared)."""
    import moderngl

    layers = texture_layers()
    materials = ctx.texture_array((layers.shape[2], layers.shape[1], len(layers)), 1, layers.tobytes())
    materials.build_mipmaps()
    materials.filter = (moderngl.LINEAR_MIPMAP_NEAREST, moderngl.LINEAR)
    materials.repeat_x = materials.repeat_y = True
    return materials


class GLRenderer:
    """A scene on the GPU side of the process's GL context.

    Args:
        scene: The scene to draw.
        bodies: Movable bodies as ``(object index, centre)`` (see :func:`scene_geometry`).
        panorama: ``one_pass`` (default): a level rig of cameras at one eye drawn through wide
            views and looked up ray by ray (:mod:`vlnverse.sim.gl.panorama`); ``direct``: every
            camera its own pass.
    """

    def __init__(self, scene: Scene, bodies: Sequence[tuple[int, np.ndarray]], panorama: str = "one_pass") -> None:
        if panorama not in PANORAMA_MODES:
            raise ConfigError(f"unknown panorama mode {panorama!r}; valid: {', '.join(PANORAMA_MODES)}")
        self.panorama = panorama
        self._geometry = scene_geometry(scene, bodies)
        with current_context() as ctx:
            self._ctx = ctx
            self._upload(scene, len(bodies))
        self._rigs: RigRenderer | None = None  # made by the first rig drawn in one pass
        self._targets: dict[tuple[int, int], tuple] = {}

    def _upload(self, scene: Scene, bodies: int) -> None:
        """Programs, geometry, textures, lights: everything the scene needs on the GL side."""
        import moderngl

        ctx = self._ctx
        lighting = scene_lighting(scene)
        light_slots, room_slots = shaders.array_slots(len(lighting.lights)), shaders.array_slots(len(lighting.ranges))
        self._fragment = shaders.scene_fragment(light_slots, room_slots)
        self._shared = programs.acquire(ctx, shaders.VERTEX, self._fragment)
        self._program = program = self._shared.value
        self._buffer = ctx.buffer(vertex_data(scene, self._geometry))
        self._vao = ctx.vertex_array(program, [(self._buffer, VERTEX_FORMAT, *ATTRIBUTES)])
        self._shared_materials = programs.share(ctx, ("materials",), lambda: _material_array(ctx))
        self._materials = self._shared_materials.value
        room_map = np.ascontiguousarray(lighting.room_map)
        self._rooms = ctx.texture((room_map.shape[1], room_map.shape[0]), 1, room_map.tobytes(), dtype="u1")
        self._rooms.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._poses = ctx.texture((4, bodies + 1), 4, dtype="f4")
        self._poses.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._pose_rows = np.tile(np.eye(4, dtype=np.float32).T.reshape(1, 16), (bodies + 1, 1))
        self._poses.write(self._pose_rows.tobytes())
        self._poses_stale = False
        self._settings = {"materials": 0, "rooms": 1, "poses": 2,
                          "room_frame": (*lighting.origin, 1.0 / lighting.resolution),
                          "room_lights": _padded(lighting.ranges, room_slots, 2),
                          "lights": _padded(lighting.lights, light_slots, 4),
                          "light_colours": _padded(lighting.colours, light_slots, 3),
                          "ambient": AMBIENT, "exposure": EXPOSURE, "softness": LIGHT_SOFTNESS}
        self._shared.claim(self, self._set_uniforms)

    def _set_uniforms(self) -> None:
        """This scene's uniforms on the (shared) scene program."""
        _write_uniforms(self._program, self._settings)

    def _set_rig_uniforms(self) -> None:
        """This scene's uniforms on the (shared) rig program."""
        _write_uniforms(self._shared_rig.value, self._settings)

    def _rig_renderer(self) -> RigRenderer:
        """The one-pass rig renderer, made on first use (its program, shared as the scene
        program is, compiled by the process's first)."""
        if self._rigs is None:
            local, rows, prims = self._geometry
            self._shared_rig = programs.acquire(self._ctx, shaders.TRIANGLE_VERTEX, self._fragment)
            self._rigs = RigRenderer(self._ctx, self._shared_rig.value, self._buffer,
                                     Triangles(local.astype(np.float32), rows, prims))
            self._rigs.triangles.set_poses(self._matrices())
        self._shared_rig.claim(self, self._set_rig_uniforms)
        return self._rigs

    def _matrices(self) -> np.ndarray:
        """The movable bodies' world transforms (B, 4, 4), as the GPU has them."""
        return self._pose_rows[1:].reshape(-1, 4, 4).transpose(0, 2, 1)

    def set_poses(self, matrices: np.ndarray) -> None:
        """World transforms (B, 4, 4) of the movable bodies, in ``bodies`` order."""
        rows = np.asarray(matrices, dtype=np.float32).transpose(0, 2, 1).reshape(-1, 16)
        if not np.array_equal(rows, self._pose_rows[1:]):
            self._pose_rows[1:] = rows
            self._poses_stale = True
            if self._rigs is not None:
                self._rigs.triangles.set_poses(self._matrices())

    def _target(self, width: int, height: int) -> tuple:
        target = self._targets.get((width, height))
        if target is None:
            ctx = self._ctx
            colour = ctx.renderbuffer((width, height), 4)
            ids = ctx.renderbuffer((width, height), 1, dtype="i4")
            depth = ctx.depth_renderbuffer((width, height))
            # Clearing writes the colour's bits into integer attachments: the second
            # framebuffer clears the ids alone, to zero bits (id 0: nothing).
            target = (ctx.framebuffer([colour, ids], depth), ctx.framebuffer([ids]), colour, ids, depth)
            self._targets[(width, height)] = target
        return target

    def render(self, requests: Sequence[CameraRequest]) -> list[CameraFrame]:
        """Frames of ``requests``: one pass per request, or per level rig (see ``panorama``);
        buffers not asked for are not read back."""
        with current_context():
            return self._render(requests)

    def _render(self, requests: Sequence[CameraRequest]) -> list[CameraFrame]:
        import moderngl

        ctx = self._ctx
        self._shared.claim(self, self._set_uniforms)
        if self._poses_stale:
            self._poses.write(self._pose_rows.tobytes())
            self._poses_stale = False
        ctx.enable_only(moderngl.DEPTH_TEST)
        self._materials.use(0)
        self._rooms.use(1)
        self._poses.use(2)
        frames: list[CameraFrame | None] = [None] * len(requests)
        for indices in self._batches(requests):
            if len(indices) > 1:
                views = [requests[i] for i in indices]
                sky = linear_depth(np.ones(1, np.float32), views[0].near, views[0].far)[0]
                rig = self._rig_renderer().render(views, self._draw, BACKGROUND, sky)
                for i, frame in zip(indices, rig, strict=True):
                    frames[i] = frame
                continue
            request = requests[indices[0]]
            fbo, id_fbo = self._target(request.width, request.height)[:2]
            fbo.clear(*BACKGROUND, 1.0, depth=1.0)
            id_fbo.clear(0.0, 0.0, 0.0, 0.0)
            fbo.use()
            self._draw(request)
            finish(ctx)  # rasterized without the GIL: other threads run meanwhile
            frames[indices[0]] = self._read(fbo, request)
        return frames

    def _batches(self, requests: Sequence[CameraRequest]) -> list[list[int]]:
        """Request indices drawn together: each level rig worth one pass, else one by one."""
        if self.panorama == "direct":
            return [[i] for i in range(len(requests))]
        rigs: dict[tuple, list[int]] = {}
        for i, request in enumerate(requests):
            rigs.setdefault(rig_key(request), []).append(i)
        batches = []
        for indices in rigs.values():
            if worth_it([requests[i] for i in indices]):
                batches.append(indices)
            else:
                batches.extend([i] for i in indices)
        return batches

    def _draw(self, request: CameraRequest, program=None, vao=None, vertices: int = -1, first: int = 0) -> None:
        """The scene from ``request``'s camera, into the bound framebuffer's viewport (by
        default with the scene's program and vertex array; ``vertices`` and ``first`` as
        moderngl's ``VertexArray.render`` takes them)."""
        import moderngl

        program, vao = program or self._program, vao or self._vao
        view = np.array(view_matrix(request.position, request.yaw, request.pitch)).reshape(4, 4).T
        program["view_proj"].write((projection_matrix(request) @ view).T.astype(np.float32).tobytes())
        program["eye"].value = tuple(float(v) for v in request.position)
        vao.render(moderngl.TRIANGLES, vertices=vertices, first=first)

    @staticmethod
    def _read(fbo, request: CameraRequest) -> CameraFrame:
        shape = (request.height, request.width)
        frame = CameraFrame()
        if request.rgb:
            frame.rgb = np.frombuffer(fbo.read(components=3, attachment=0), np.uint8).reshape(*shape, 3)
        if request.depth:
            buffer = np.empty(shape, np.float32)
            fbo.read_into(buffer, components=1, attachment=-1, dtype="f4")
            frame.depth = linear_depth(buffer, request.near, request.far)
        if request.instance:
            ids = np.frombuffer(fbo.read(components=1, attachment=1, dtype="i4"), np.int32).reshape(shape)
            frame.instance = ids - 1
        return frame

    def release(self) -> None:
        """Free the GPU-side scene (idempotent)."""
        with current_context():
            for target in self._targets.values():
                for item in target:
                    item.release()
            self._targets.clear()
            if self._rigs is not None:
                self._rigs.release()
                self._rigs = None
                programs.release(self.__dict__.pop("_shared_rig"), self)
            for name in ("_vao", "_buffer", "_rooms", "_poses"):
                resource = self.__dict__.pop(name, None)
                if resource is not None:
                    resource.release()
            for name, value in (("_shared", "_program"), ("_shared_materials", "_materials")):
                shared = self.__dict__.pop(name, None)
                if shared is not None:
                    self.__dict__.pop(value, None)
                    programs.release(shared, self)
