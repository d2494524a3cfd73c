"""A level camera rig in one pass: a few wide views drawn once, resampled into every view.

Views that share an eye, intrinsics and a level horizon (the 12 × 30° panorama) overlap
about three times over. Instead of shading each of them, :class:`RigRenderer` draws
``WIDE_VIEWS`` wide views (60° of azimuth each, tall enough for every requested row, at
the requested views' focal length) into one atlas, then a second pass samples every
requested pixel's ray from the wide view nearest in azimuth and writes all views into
one output atlas, read back once per buffer.

Per pixel: colour is interpolated bilinearly; prim ids are the nearest wide texel's; depth
interpolates the depth buffer bilinearly (exact on a plane, where it is affine in the
image) unless the four texels straddle a depth edge, where the nearest is taken, and is
then measured along the requested view's own axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vlnverse.sim.types import CameraFrame, CameraRequest

#: Wide views around the eye, evenly spaced in azimuth.
WIDE_VIEWS = 6
#: Texels of margin around each wide view's needed area (bilinear footprints stay inside).
MARGIN = 2
#: Four depth texels are interpolated when their linear depths spread at most this
#: (relative), or when they lie on one plane to within ``PLANAR`` (depth-buffer units).
EDGE_SPREAD = 0.01
PLANAR = 2.0e-6
#: Panorama modes: ``one_pass`` (this module, where it saves fragments) or ``direct``.
PANORAMA_MODES = ("one_pass", "direct")

RESAMPLE_VERTEX = """
#version 330
void main() {
    vec2 corner = vec2(float((gl_VertexID & 1) << 2), float((gl_VertexID & 2) << 1)) - 1.0;
    gl_Position = vec4(corner, 0.0, 1.0);
}
"""

RESAMPLE_FRAGMENT = """
#version 400
uniform sampler2D lut;       // per output pixel: wide-atlas texel (x, y), 1 / its ray's forward component
uniform sampler2D colour;
uniform sampler2D depth;
uniform isampler2D ids;
uniform vec2 clip;           // near, far
uniform float edge_spread;
uniform float planar;
layout(location = 0) out vec4 out_colour;
layout(location = 1) out float out_depth;
layout(location = 2) out int out_id;

float linear(float d) { return clip.x * clip.y / (clip.y - (clip.y - clip.x) * d); }

void main() {
    vec4 map = texelFetch(lut, ivec2(gl_FragCoord.xy), 0);
    vec2 texel = map.xy, atlas = vec2(textureSize(colour, 0));
    out_colour = vec4(texture(colour, (texel + 0.5) / atlas).rgb, 1.0);
    ivec2 nearest = ivec2(floor(texel + 0.5));
    out_id = texelFetch(ids, nearest, 0).r;
    vec2 base = floor(texel), w = texel - base;
    vec4 g = textureGather(depth, (base + 1.0) / atlas);  // (0,1), (1,1), (1,0), (0,0)
    float low = linear(min(min(g.x, g.y), min(g.z, g.w))), high = linear(max(max(g.x, g.y), max(g.z, g.w)));
    // Bilinear where the four texels are one plane (the depth buffer is affine on a plane)
    // or close in depth; else the nearest texel (a depth edge).
    bool even = abs(g.w + g.y - g.x - g.z) <= planar || high - low <= edge_spread * low;
    float d = even ? mix(mix(g.w, g.z, w.x), mix(g.x, g.y, w.x), w.y) : texelFetch(depth, nearest, 0).r;
    out_depth = d >= 1.0 ? clip.y : linear(d) * map.z;
}
"""


def rig_key(request: CameraRequest) -> tuple:
    """Requests with equal keys form one rig (they differ in yaw and buffers only)."""
    return (tuple(request.position), request.pitch, request.width, request.height, request.hfov_deg,
            request.near, request.far)


def focal_pixels(request: CameraRequest) -> float:
    """The focal length of a request in pixels."""
    return (request.width / 2.0) / math.tan(math.radians(request.hfov_deg) / 2.0)


def wide_request(view: CameraRequest, yaw: float) -> CameraRequest:
    """A wide view at ``yaw`` covering, at ``view``'s focal length, every ray of any view
    like ``view`` (any yaw) that lies within half a wide step of its azimuth."""
    focal = focal_pixels(view)
    half_step = math.pi / WIDE_VIEWS
    rise = view.height / 2.0 / focal  # the steepest row's tangent
    width = 2 * math.ceil(focal * math.tan(half_step) + MARGIN)
    height = 2 * math.ceil(focal * rise / math.cos(half_step) + MARGIN)
    hfov = math.degrees(2.0 * math.atan(width / 2.0 / focal))
    return CameraRequest(position=view.position, yaw=yaw, pitch=0.0, width=width, height=height,
                         hfov_deg=hfov, near=view.near, far=view.far, rgb=True, depth=True, instance=True)


def worth_it(views: Sequence[CameraRequest]) -> bool:
    """Whether ``views`` (one rig) are a level rig the wide views draw with fewer fragments."""
    first = views[0]
    if first.pitch != 0.0 or len(views) < 2:
        return False
    wide = wide_request(first, 0.0)
    return WIDE_VIEWS * wide.width * wide.height < len(views) * first.width * first.height


def resample_map(views: Sequence[CameraRequest]) -> np.ndarray:
    """(N·H, W, 4) float32: for each pixel of the views stacked top to bottom, the wide-atlas
    texel its ray falls on (x, y), and 1 / the ray's forward component in that wide view
    (a wide depth times it is the depth along the view's own axis, the ray having unit
    forward component there). Wide view 0 looks along ``views[0]``'s yaw.

    Pixel conventions of :func:`vlnverse.sim.gl.renderer.projection_matrix`: column ``u``
    sees the tangent ``(u - W/2) / f`` to the right, row ``v`` the tangent ``(v + 1 - H/2) / f``
    downwards (its half-pixel shift, mirrored by the flipped Y axis).
    """
    first = views[0]
    focal, wide = focal_pixels(first), wide_request(first, 0.0)
    right = (np.arange(first.width) - first.width / 2.0) / focal
    down = (np.arange(first.height) + 1.0 - first.height / 2.0) / focal
    step = 2.0 * math.pi / WIDE_VIEWS
    maps = []
    for view in views:
        yaw = view.yaw - first.yaw
        # The ray (1, right, -down) of the view's camera frame turned by the view's yaw
        # (camera right is the world's -y at yaw 0).
        x = math.cos(yaw) + right[None, :] * math.sin(yaw)
        y = math.sin(yaw) - right[None, :] * math.cos(yaw)
        x, y = np.broadcast_to(x, (first.height, first.width)), np.broadcast_to(y, (first.height, first.width))
        k = np.round(np.arctan2(y, x) / step) % WIDE_VIEWS
        c, s = np.cos(k * step), np.sin(k * step)
        along = x * c + y * s
        across = x * s - y * c
        column = wide.width / 2.0 + focal * across / along + k * wide.width
        row = wide.height / 2.0 - 1.0 + focal * down[:, None] / along
        maps.append(np.stack([column, row, 1.0 / along, np.zeros_like(along)], axis=-1))
    return np.concatenate(maps).astype(np.float32)


class RigRenderer:
    """The two passes of a level rig, on a :class:`~vlnverse.sim.gl.renderer.GLRenderer`'s
    context (its ``draw`` renders the scene for one camera request)."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._program = ctx.program(vertex_shader=RESAMPLE_VERTEX, fragment_shader=RESAMPLE_FRAGMENT)
        for name, value in (("colour", 3), ("depth", 4), ("ids", 5), ("lut", 6), ("edge_spread", EDGE_SPREAD),
                            ("planar", PLANAR)):
            if name in self._program:
                self._program[name].value = value
        self._vao = ctx.vertex_array(self._program, [])
        self._wide: dict[tuple, tuple] = {}  # wide view size → its atlas's GL objects
        self._outputs: dict[tuple, tuple] = {}  # (rig key, relative yaws) → map and output atlas

    def _wide_atlas(self, wide: CameraRequest) -> tuple:
        found = self._wide.get((wide.width, wide.height))
        if found is None:
            import moderngl

            ctx = self._ctx
            size = (WIDE_VIEWS * wide.width, wide.height)
            colour = ctx.texture(size, 4)
            colour.filter = (moderngl.LINEAR, moderngl.LINEAR)
            ids = ctx.texture(size, 1, dtype="i4")
            ids.filter = (moderngl.NEAREST, moderngl.NEAREST)
            depth = ctx.depth_texture(size)
            depth.compare_func = ""
            depth.filter = (moderngl.NEAREST, moderngl.NEAREST)
            found = (ctx.framebuffer([colour, ids], depth), ctx.framebuffer([ids]), colour, ids, depth)
            self._wide[(wide.width, wide.height)] = found
        return found

    def _output(self, views: Sequence[CameraRequest]) -> tuple:
        first = views[0]
        key = (rig_key(first)[1:], tuple(round(v.yaw - first.yaw, 9) for v in views))
        found = self._outputs.get(key)
        if found is None:
            import moderngl

            ctx = self._ctx
            table = resample_map(views)
            lut = ctx.texture((table.shape[1], table.shape[0]), 4, table.tobytes(), dtype="f4")
            lut.filter = (moderngl.NEAREST, moderngl.NEAREST)
            size = (first.width, first.height * len(views))
            buffers = [ctx.renderbuffer(size, 4), ctx.renderbuffer(size, 1, dtype="f4"),
                       ctx.renderbuffer(size, 1, dtype="i4")]
            found = self._outputs[key] = (ctx.framebuffer(buffers), lut, *buffers)
        return found

    def render(self, views: Sequence[CameraRequest], draw, background: tuple[float, float, float]) -> list[CameraFrame]:
        """Frames of ``views`` (one level rig, see :func:`worth_it`); ``draw(request)`` draws
        the scene into the bound framebuffer's viewport."""
        import moderngl

        ctx, first = self._ctx, views[0]
        wide = [wide_request(first, first.yaw + 2.0 * math.pi * k / WIDE_VIEWS) for k in range(WIDE_VIEWS)]
        fbo, id_fbo, colour, ids, depth = self._wide_atlas(wide[0])
        out, lut = self._output(views)[:2]
        fbo.clear(*background, 1.0, depth=1.0)
        id_fbo.clear(0.0, 0.0, 0.0, 0.0)
        fbo.use()
        for k, request in enumerate(wide):
            ctx.viewport = (k * request.width, 0, request.width, request.height)
            draw(request)
        if "clip" in self._program:
            self._program["clip"].value = (float(first.near), float(first.far))
        colour.use(3)
        depth.use(4)
        ids.use(5)
        lut.use(6)
        ctx.enable_only(moderngl.NOTHING)
        out.use()
        self._vao.render(moderngl.TRIANGLES, vertices=3)
        ctx.enable_only(moderngl.DEPTH_TEST)
        return self._read(out, views)

    @staticmethod
    def _read(out, views: Sequence[CameraRequest]) -> list[CameraFrame]:
        """Split the output atlas (views stacked top to bottom) into frames: each buffer is
        read back once, for every view, if any view asks for it."""
        first, count = views[0], len(views)
        shape = (count, first.height, first.width)
        rgb = depth = ids = None
        if any(v.rgb for v in views):
            rgb = np.frombuffer(out.read(components=3, attachment=0), np.uint8).reshape(*shape, 3)
        if any(v.depth for v in views):
            depth = np.frombuffer(out.read(components=1, attachment=1, dtype="f4"), np.float32).reshape(shape)
        if any(v.instance for v in views):
            ids = np.frombuffer(out.read(components=1, attachment=2, dtype="i4"), np.int32).reshape(shape) - 1
        return [CameraFrame(rgb=rgb[i] if v.rgb else None, depth=depth[i] if v.depth else None,
                            instance=ids[i] if v.instance else None) for i, v in enumerate(views)]

    def release(self) -> None:
        for group in (*self._wide.values(), *self._outputs.values()):
            for item in group:
                item.release()
        self._wide.clear()
        self._outputs.clear()
        self._vao.release()
        self._program.release()
