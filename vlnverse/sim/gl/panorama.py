"""A level camera rig in one pass: a few wide views drawn once, every view looked up in them.

Views that share an eye, intrinsics and a level horizon (the 12 × 30° panorama) overlap
about three times over. Instead of shading each of them, :class:`RigRenderer` draws
``WIDE_VIEWS`` wide views (60° of azimuth each, tall enough for every requested row, at
the requested views' focal length) into one atlas, nearest triangles first (so that few
hidden fragments are shaded), writing each texel's colour and the triangle drawn there.
Each requested pixel's ray is then found in the wide view nearest in azimuth
(:func:`atlas_coordinates`) and :class:`vlnverse.sim.gl.reproject.Reprojection` gives its
colour (bilinear) and the prim id and depth of the triangle the ray hits (exact, never
blended). The wide views are drawn and read back one by one, and the rays that fall in a
wide view already read are looked up by a helper thread while the next ones draw
(:func:`vlnverse.sim.gl.overlap.overlapped`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vlnverse.sim.gl.context import finish
from vlnverse.sim.gl.overlap import overlapped
from vlnverse.sim.gl.reproject import Reprojection, Triangles, lookup_table, wide_view_runs
from vlnverse.sim.gl.shaders import ATTRIBUTES, VERTEX_FORMAT
from vlnverse.sim.types import CameraFrame, CameraRequest

#: Wide views around the eye, evenly spaced in azimuth.
WIDE_VIEWS = 6
#: Texels of margin around each wide view's needed area (the texels around every ray,
#: see :data:`vlnverse.sim.gl.reproject.REACH`, stay inside).
MARGIN = 2
#: Pixels of slack around each wide view when its triangles are culled.
CULL_PIXELS = 4
#: Pieces each wide view's rays are looked up in (the pieces left when the drawing ends
#: are shared by the two threads).
PIECES = 2
#: Panorama modes: ``one_pass`` (this module, where it saves fragments; the default) or ``direct``.
PANORAMA_MODES = ("one_pass", "direct")


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


def atlas_coordinates(views: Sequence[CameraRequest]) -> np.ndarray:
    """(V, H, W, 2) float32: for each pixel of the views, the point (x, y) of the wide-view
    atlas its ray falls on (texel centres at integers; wide view ``k`` holds columns
    ``k·w`` to ``(k+1)·w - 1`` and looks along ``views[0]``'s yaw turned by ``k`` steps).

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
        maps.append(np.stack([column, row], axis=-1))
    return np.ascontiguousarray(np.stack(maps), dtype=np.float32)


class RigRenderer:
    """The wide views of a level rig and their lookup, on a
    :class:`~vlnverse.sim.gl.renderer.GLRenderer`'s context.

    Args:
        ctx: The GL context.
        program: The scene program writing triangle ids
            (:data:`vlnverse.sim.gl.shaders.TRIANGLE_VERTEX`), the caller's to free.
        vertices: The scene's vertex buffer.
        triangles: Its triangles, placed as the GPU has them.
    """

    def __init__(self, ctx, program, vertices, triangles: Triangles) -> None:
        self._ctx, self._program, self.triangles = ctx, program, triangles
        count = len(triangles.prims)
        self._indices = ctx.buffer(reserve=max(count, 1) * 3 * 4 * WIDE_VIEWS, dynamic=True)  # a list per wide view
        self._vao = ctx.vertex_array(program, [(vertices, VERTEX_FORMAT, *ATTRIBUTES)], index_buffer=self._indices,
                                     index_element_size=4)
        self._corners = np.arange(3, dtype=np.int32)
        self._atlases: dict[tuple, tuple] = {}  # wide view size → its atlas's GL objects and host arrays
        self._tables: dict[tuple, tuple] = {}  # (rig key, relative yaws) → lookup table, pieces per wide view
        #: Rays of the last render whose triangle no texel around them showed (see
        #: :mod:`vlnverse.sim.gl.reproject`).
        self.misses = 0

    def _atlas(self, wide: CameraRequest) -> tuple:
        found = self._atlases.get((wide.width, wide.height))
        if found is None:
            ctx = self._ctx
            size = (WIDE_VIEWS * wide.width, wide.height)
            colour, drawn = ctx.renderbuffer(size, 4), ctx.renderbuffer(size, 1, dtype="i4")
            depth = ctx.depth_renderbuffer(size)
            # Clearing writes the colour's bits into integer attachments: the second
            # framebuffer clears the triangle ids alone, to zero bits (0: nothing drawn).
            # Host side: the atlas, and one wide view as read back.
            found = (ctx.framebuffer([colour, drawn], depth), ctx.framebuffer([drawn]), colour, drawn, depth,
                     np.empty((size[1], size[0], 4), np.uint8), np.empty((size[1], size[0]), np.int32),
                     np.empty((size[1], wide.width, 4), np.uint8), np.empty((size[1], wide.width), np.int32))
            self._atlases[(wide.width, wide.height)] = found
        return found

    def _table(self, views: Sequence[CameraRequest], wide: CameraRequest) -> tuple:
        """The views' lookup table, and per wide view the pieces (runs of rays) that fall in it."""
        first = views[0]
        key = (rig_key(first)[1:], tuple(round(v.yaw - first.yaw, 9) for v in views))
        if key not in self._tables:
            columns = WIDE_VIEWS * wide.width
            table = lookup_table(atlas_coordinates(views), wide.width, columns, wide.height)
            runs = wide_view_runs(table[0], columns, wide.width, WIDE_VIEWS)
            self._tables[key] = table, [[p for p in np.array_split(r, PIECES) if len(p)] for r in runs]
        return self._tables[key]

    def _index_lists(self, wide: Sequence[CameraRequest]) -> list[np.ndarray]:
        """Per wide view, the vertex indices (int32) of its triangles nearest the eye first,
        less those wholly outside it (they would draw nothing there)."""
        triangles, eye = self.triangles, wide[0].position
        order = triangles.drawing_order(eye)
        focal = focal_pixels(wide[0])
        tangents = ((wide[0].width / 2.0 + CULL_PIXELS) / focal, (wide[0].height / 2.0 + CULL_PIXELS) / focal)
        outside = triangles.outside(eye, [view.yaw for view in wide], tangents)[:, order]
        return [(order[~out][:, None] * 3 + self._corners).reshape(-1) for out in outside]

    def render(self, views: Sequence[CameraRequest], draw, background: tuple[float, float, float],
               sky: float) -> list[CameraFrame]:
        """Frames of ``views`` (one level rig, see :func:`worth_it`). ``draw(request, program,
        vao, vertices=, first=)`` draws the scene into the bound framebuffer's viewport; ``sky`` is the depth
        where no geometry is."""
        ctx, first = self._ctx, views[0]
        wide = [wide_request(first, first.yaw + 2.0 * math.pi * k / WIDE_VIEWS) for k in range(WIDE_VIEWS)]
        fbo, id_fbo, _, _, _, colour, drawn, *_ = atlas = self._atlas(wide[0])
        table, pieces = self._table(views, wide[0])
        lists = self._index_lists(wide)
        self._indices.write(np.concatenate(lists).tobytes())
        fbo.clear(*background, 1.0, depth=1.0)
        id_fbo.clear(0.0, 0.0, 0.0, 0.0)
        fbo.use()
        want_rgb, want_geometry = any(v.rgb for v in views), any(v.depth or v.instance for v in views)
        lookup = Reprojection(colour, drawn, self.triangles, table, np.array([v.yaw for v in views]), first.position,
                              focal_pixels(first), first.near, first.far, sky, want_rgb, want_geometry)

        def drawn_pieces():
            """Draws and reads back the wide views one by one, yielding the pieces each completes."""
            first_index = 0
            for k, (request, indices) in enumerate(zip(wide, lists, strict=True)):
                ctx.viewport = (k * request.width, 0, request.width, request.height)
                if len(indices):
                    draw(request, self._program, self._vao, vertices=len(indices), first=first_index)
                first_index += len(indices)
                self._read_back(atlas, k, request, want_rgb, want_geometry)
                yield from pieces[k]

        self.misses = sum(overlapped(drawn_pieces(), lookup.run))
        return [CameraFrame(rgb=lookup.rgb[i] if v.rgb else None, depth=lookup.depth[i] if v.depth else None,
                            instance=lookup.ids[i] if v.instance else None) for i, v in enumerate(views)]

    def _read_back(self, atlas: tuple, k: int, wide: CameraRequest, want_rgb: bool, want_geometry: bool) -> None:
        """Wide view ``k``'s texels, drawn, into the host atlas."""
        fbo, *_, colour, drawn, view_colour, view_drawn = atlas
        finish(self._ctx)
        viewport, columns = (k * wide.width, 0, wide.width, wide.height), slice(k * wide.width, (k + 1) * wide.width)
        if want_rgb:
            fbo.read_into(view_colour, viewport=viewport, components=4, attachment=0)
            colour[:, columns] = view_colour
        if want_geometry:
            fbo.read_into(view_drawn, viewport=viewport, components=1, attachment=1, dtype="i4")
            drawn[:, columns] = view_drawn

    def release(self) -> None:
        for group in self._atlases.values():
            for item in group[:5]:
                item.release()
        self._atlases.clear()
        self._tables.clear()
        for item in (self._vao, self._indices):
            item.release()
