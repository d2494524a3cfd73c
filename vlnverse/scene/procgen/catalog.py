"""The object catalog: parametric furniture and small objects built from primitives.

Each :class:`Category` knows its size range, colour palette, materials, mass, states and
how to build its parts. Object-local frame: the object's front faces +X, its width runs
along Y, the footprint is centred on the origin and the bottom sits at z = 0. Parts are
grouped by *slot*: ``"main"`` takes the instance's colour/material (what instructions
name), other slots are fixed looks such as ``("black", "metal")``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vlnverse.scene.procgen.geometry import MeshData, box, box_from_bounds, cylinder, lathe, merge


@dataclass(frozen=True)
class Surface:
    """A horizontal support surface in object-local coordinates (things can stand on it)."""

    z: float
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class Built:
    """An object's geometry: meshes per slot plus its support surfaces."""

    parts: dict[str, MeshData]
    surfaces: tuple[Surface, ...] = ()


Look = tuple[str, str]  # (colour name, material name)
Builder = Callable[[np.ndarray], Built]


@dataclass(frozen=True)
class Category:
    """An object category of the catalog.

    Attributes:
        name: Semantic class (``UsdSemantics`` label), snake_case.
        size_min, size_max: Ranges of (depth x, width y, height z) in metres.
        colors, materials: Palettes for the ``main`` slot.
        slots: Fixed looks of the other slots, by slot name.
        build: Returns the parts for a sampled size.
        mass: Mass range (kg).
        movable: Whether instances are rigid bodies (otherwise static colliders).
        states: Possible ``vlnverse:state`` values (empty: not applicable).
        small: Whether it is a small object placed on support surfaces.
    """

    name: str
    size_min: tuple[float, float, float]
    size_max: tuple[float, float, float]
    colors: tuple[str, ...]
    materials: tuple[str, ...]
    build: Builder
    mass: tuple[float, float]
    slots: tuple[tuple[str, Look], ...] = ()
    movable: bool = False
    states: tuple[str, ...] = ()
    small: bool = False

    def sample_size(self, rng: np.random.Generator) -> np.ndarray:
        lo, hi = np.asarray(self.size_min), np.asarray(self.size_max)
        return np.round(lo + rng.random(3) * (hi - lo), 3)


# --------------------------------------------------------------------------- builders


def _legs(sx: float, sy: float, h: float, t: float, inset: float = 0.03) -> list[MeshData]:
    xs = (-sx / 2 + inset + t / 2, sx / 2 - inset - t / 2)
    ys = (-sy / 2 + inset + t / 2, sy / 2 - inset - t / 2)
    return [box((x, y, h / 2), (t, t, h)) for x in xs for y in ys]


def _table(top_t: float = 0.04, leg_t: float = 0.05) -> Builder:
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        top = box((0, 0, sz - top_t / 2), (sx, sy, top_t))
        legs = merge(_legs(sx, sy, sz - top_t, leg_t))
        return Built({"main": top, "legs": legs}, (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))
    return build


def _cabinet(front: str = "drawers", rows: int = 3) -> Builder:
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        body = box((0, 0, sz / 2), (sx, sy, sz))
        details = []
        if front == "drawers":
            for k in range(rows):
                z = sz * (k + 0.5) / rows
                details.append(box((sx / 2 + 0.01, 0, z), (0.02, sy * 0.3, 0.03)))
        elif front == "doors":
            for y in (-0.06, 0.06):
                details.append(box((sx / 2 + 0.01, y, sz * 0.55), (0.02, 0.02, min(0.4, sz * 0.3))))
        parts = {"main": body}
        if details:
            parts["handles"] = merge(details)
        return Built(parts, (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))
    return build


def _counter(kind: str) -> Builder:
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        body = box((0, 0, (sz - 0.04) / 2), (sx, sy, sz - 0.04))
        top = box((0, 0, sz - 0.02), (sx, sy, 0.04))
        parts = {"main": body, "top": top}
        surfaces = (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),)
        if kind == "stove":
            parts["top"] = merge([top] + [cylinder((x, y, sz), 0.09, 0.015)
                                          for x in (-sx / 5, sx / 5) for y in (-sy / 5, sy / 5)])
            surfaces = ()
        elif kind == "sink":
            parts["fixture"] = merge([cylinder((-sx / 2 + 0.08, 0, sz), 0.02, 0.3),
                                      box((-sx / 2 + 0.15, 0, sz + 0.29), (0.16, 0.03, 0.02))])
            surfaces = (Surface(sz, -sx / 2, sy / 6, sx / 2, sy / 2),)
        return Built(parts, surfaces)
    return build


def _shelf(boards: int) -> Builder:
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        t = 0.02
        frame = [box((0, -sy / 2 + t / 2, sz / 2), (sx, t, sz)), box((0, sy / 2 - t / 2, sz / 2), (sx, t, sz)),
                 box((-sx / 2 + t / 2, 0, sz / 2), (t, sy - 2 * t, sz))]
        surfaces = []
        for k in range(boards):
            z = (sz - t) * k / (boards - 1) if boards > 1 else 0.0
            frame.append(box((t / 2, 0, z + t / 2), (sx - t, sy - 2 * t, t)))
            surfaces.append(Surface(round(z + t, 4), -sx / 2 + t, -sy / 2 + t, sx / 2, sy / 2 - t))
        return Built({"main": merge(frame)}, tuple(surfaces))
    return build


def _wall_shelf(s: np.ndarray) -> Built:
    sx, sy, sz = s
    board = box((0, 0, sz - 0.015), (sx, sy, 0.03))
    brackets = merge([box((-sx / 2 + 0.01, y, (sz - 0.03) / 2), (0.02, 0.02, sz - 0.03))
                      for y in (-sy / 3, sy / 3)])
    return Built({"main": board, "legs": brackets}, (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))


def _bed(s: np.ndarray) -> Built:
    sx, sy, sz = s  # sz = headboard height
    frame = merge([box((0, 0, 0.15), (sx, sy, 0.3)), box((-sx / 2 + 0.04, 0, sz / 2), (0.08, sy, sz))])
    mattress = box((0.04, 0, 0.4), (sx - 0.1, sy - 0.06, 0.2))
    pillows = merge([box((-sx / 2 + 0.3, y, 0.56), (0.35, min(0.6, sy / 2 - 0.1), 0.12))
                     for y in ((-sy / 4, sy / 4) if sy > 1.2 else (0.0,))])
    return Built({"main": frame, "mattress": mattress, "pillows": pillows},
                 (Surface(0.5, -sx / 2 + 0.6, -sy / 2 + 0.05, sx / 2 - 0.05, sy / 2 - 0.05),))


def _sofa(arms: bool = True) -> Builder:
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        arm = 0.18 if arms else 0.0
        body = [box((0, 0, 0.2), (sx, sy, 0.4)), box((-sx / 2 + 0.1, 0, sz / 2), (0.2, sy, sz))]
        if arms:
            body += [box((0, y, 0.3), (sx, arm, 0.6)) for y in (-sy / 2 + arm / 2, sy / 2 - arm / 2)]
        cushion = box((0.1, 0, 0.46), (sx - 0.2, sy - 2 * arm - 0.02, 0.12))
        return Built({"main": merge(body), "cushion": cushion},
                     (Surface(0.52, -sx / 2 + 0.25, -sy / 2 + arm, sx / 2, sy / 2 - arm),))
    return build


def _chair(s: np.ndarray) -> Built:
    sx, sy, sz = s
    seat_h = 0.45
    seat = box((0, 0, seat_h - 0.02), (sx, sy, 0.04))
    back = box((-sx / 2 + 0.02, 0, (seat_h + sz) / 2), (0.04, sy, sz - seat_h))
    return Built({"main": merge([seat, back]), "legs": merge(_legs(sx, sy, seat_h - 0.04, 0.035, 0.02))})


def _office_chair(s: np.ndarray) -> Built:
    sx, sy, sz = s
    seat = box((0, 0, 0.47), (sx * 0.8, sy * 0.8, 0.08))
    back = box((-sx * 0.4 + 0.03, 0, (0.51 + sz) / 2), (0.06, sy * 0.8, sz - 0.51))
    base = merge([cylinder((0, 0, 0), min(sx, sy) / 2, 0.04, 10), cylinder((0, 0, 0.04), 0.03, 0.39, 8)])
    return Built({"main": merge([seat, back]), "legs": base})


def _stool(s: np.ndarray) -> Built:
    sx, sy, sz = s
    return Built({"main": cylinder((0, 0, sz - 0.04), min(sx, sy) / 2, 0.04),
                  "legs": merge(_legs(sx * 0.8, sy * 0.8, sz - 0.04, 0.03))})


def _fridge(s: np.ndarray) -> Built:
    sx, sy, sz = s
    return Built({"main": box((0, 0, sz / 2), (sx, sy, sz)),
                  "handles": merge([box((sx / 2 + 0.02, -sy / 2 + 0.08, z), (0.03, 0.03, 0.35))
                                    for z in (sz * 0.3, sz * 0.78)])},
                 (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))


def _washer(s: np.ndarray) -> Built:
    sx, sy, sz = s
    porthole = cylinder((0, 0, 0), min(0.17, sy * 0.3), 0.02, 12)
    # stand the disc up on the front face: local z becomes +x
    pts = porthole.points[:, [2, 1, 0]] * np.array([1.0, 1.0, -1.0])
    disc = MeshData(pts + np.array([sx / 2, 0.0, sz * 0.45]), porthole.counts, porthole.indices)
    return Built({"main": box((0, 0, sz / 2), (sx, sy, sz)), "handles": disc},
                 (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))


def _toilet(s: np.ndarray) -> Built:
    sx, sy, sz = s
    r = sy / 2
    bowl = lathe([(r * 0.75, 0.0), (r * 0.95, 0.3), (r, 0.4)], (min(sx * 0.12, sx / 2 - r), 0, 0), 12)
    tank = box((-sx / 2 + 0.09, 0, (0.35 + sz) / 2), (0.18, sy, sz - 0.35))
    return Built({"main": merge([bowl, tank])})


def _bathtub(s: np.ndarray) -> Built:
    sx, sy, sz = s
    t = 0.08
    shell = [box((0, 0, 0.05), (sx, sy, 0.1)),
             box((-sx / 2 + t / 2, 0, sz / 2), (t, sy, sz)), box((sx / 2 - t / 2, 0, sz / 2), (t, sy, sz)),
             box((0, -sy / 2 + t / 2, sz / 2), (sx - 2 * t, t, sz)),
             box((0, sy / 2 - t / 2, sz / 2), (sx - 2 * t, t, sz))]
    return Built({"main": merge(shell)})


def _shower(s: np.ndarray) -> Built:
    sx, sy, sz = s
    tray = box((0, 0, 0.04), (sx, sy, 0.08))
    glass = merge([box((sx / 2 - 0.01, 0, (0.08 + sz) / 2), (0.02, sy, sz - 0.08)),
                   box((0, -sy / 2 + 0.01, (0.08 + sz) / 2), (sx - 0.04, 0.02, sz - 0.08))])
    head = merge([cylinder((-sx / 2 + 0.04, 0, 0.08), 0.015, sz - 0.2, 8)])
    return Built({"main": tray, "glass": glass, "fixture": head})


def _bathroom_sink(s: np.ndarray) -> Built:
    sx, sy, sz = s
    cab = box((0, 0, (sz - 0.05) / 2), (sx, sy, sz - 0.05))
    basin = box((0, 0, sz - 0.025), (sx, sy, 0.05))
    tap = merge([cylinder((-sx / 2 + 0.06, 0, sz), 0.015, 0.22, 8),
                 box((-sx / 2 + 0.11, 0, sz + 0.21), (0.1, 0.025, 0.02))])
    return Built({"main": cab, "top": basin, "fixture": tap},
                 (Surface(sz, -sx / 2, sy / 6, sx / 2, sy / 2),))


def _flat(s: np.ndarray) -> Built:
    sx, sy, sz = s
    return Built({"main": box((0, 0, sz / 2), (sx, sy, sz))})


def _picture(s: np.ndarray) -> Built:
    sx, sy, sz = s  # hung on a wall: depth along x, bottom at z=0 of the object frame
    return Built({"main": box((0, 0, sz / 2), (sx, sy, sz)),
                  "canvas": box((sx / 2 + 0.002, 0, sz / 2), (0.004, sy * 0.85, sz * 0.85))})


def _mirror(s: np.ndarray) -> Built:
    sx, sy, sz = s
    return Built({"main": box((-0.005, 0, sz / 2), (sx - 0.01, sy, sz)),
                  "glass": box((sx / 2 - 0.005, 0, sz / 2), (0.01, sy - 0.04, sz - 0.04))})


def _tv(s: np.ndarray) -> Built:
    sx, sy, sz = s
    screen = box((0, 0, 0.06 + (sz - 0.06) / 2), (0.05, sy, sz - 0.06))
    foot = merge([box((0, 0, 0.01), (sx, 0.3, 0.02)), box((-0.005, 0, 0.04), (0.04, 0.06, 0.06))])
    return Built({"main": screen, "legs": foot})


def _plant(s: np.ndarray) -> Built:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    pot_h = min(0.35, sz * 0.35)
    pot = lathe([(r * 0.6, 0.0), (r * 0.75, pot_h)], segments=10)
    leaves = lathe([(r * 0.5, pot_h), (r, pot_h + (sz - pot_h) * 0.45), (r * 0.3, sz)], segments=10)
    return Built({"main": pot, "leaves": leaves})


def _floor_lamp(s: np.ndarray) -> Built:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    stand = merge([cylinder((0, 0, 0), r * 0.7, 0.03, 10), cylinder((0, 0, 0.03), 0.015, sz - 0.33, 8)])
    shade = lathe([(r, sz - 0.3), (r * 0.6, sz)], segments=12)
    return Built({"legs": stand, "main": shade})


def _table_lamp(s: np.ndarray) -> Built:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    stand = merge([cylinder((0, 0, 0), r * 0.6, 0.03, 10), cylinder((0, 0, 0.03), 0.012, sz * 0.55, 8)])
    shade = lathe([(r, sz * 0.55), (r * 0.6, sz)], segments=12)
    return Built({"legs": stand, "main": shade})


def _revolved(profile: list[tuple[float, float]]) -> Builder:
    """A lathe object with profile given as (radius fraction, height fraction)."""
    def build(s: np.ndarray) -> Built:
        sx, sy, sz = s
        r = min(sx, sy) / 2
        return Built({"main": lathe([(r * a, sz * b) for a, b in profile], segments=12)})
    return build


def _cup(s: np.ndarray) -> Built:
    sx, sy, sz = s
    r = min(sx, sy) / 2 - 0.012  # room for the handle inside the footprint
    body = lathe([(r * 0.85, 0.0), (r, sz)], (0, 0, 0), 12)
    handle = box((0, r + 0.006, sz * 0.55), (0.012, 0.012, sz * 0.5))
    return Built({"main": merge([body, handle])})


def _laptop(s: np.ndarray) -> Built:
    sx, sy, sz = s
    base = box((0, 0, 0.01), (sx, sy, 0.02))
    screen = box((-sx / 2 + 0.01, 0, 0.02 + (sz - 0.02) / 2), (0.01, sy, sz - 0.02))
    return Built({"main": merge([base, screen])})


def _rug(s: np.ndarray) -> Built:
    sx, sy, sz = s
    return Built({"main": box_from_bounds((-sx / 2, -sy / 2, 0.0), (sx / 2, sy / 2, sz))},
                 (Surface(sz, -sx / 2, -sy / 2, sx / 2, sy / 2),))


def _trash_can(s: np.ndarray) -> Built:
    return _revolved([(0.85, 0.0), (1.0, 1.0)])(s)


# --------------------------------------------------------------------------- catalog

_WOODS = ("light wood", "brown", "dark brown", "white", "black", "gray")
_FABRICS = ("gray", "beige", "blue", "navy", "green", "red", "cream", "brown", "teal", "yellow", "pink")
_SMALL_COLORS = ("red", "blue", "green", "yellow", "white", "black", "orange", "pink", "purple", "teal", "gray")
_METAL_BLACK: Look = ("black", "metal")
_STEEL: Look = ("silver", "metal")
_WHITE_FABRIC: Look = ("white", "fabric")
_WHITE_CERAMIC: Look = ("white", "ceramic")
_GLASS: Look = ("glass", "glass")


def _c(name, smin, smax, colors, materials, build, mass, **kw) -> Category:
    return Category(name, smin, smax, tuple(colors), tuple(materials), build, mass, **kw)


CATEGORIES: dict[str, Category] = {c.name: c for c in (
    # bedroom
    _c("bed", (1.95, 0.95, 0.9), (2.15, 1.85, 1.2), _WOODS, ("wood",), _bed, (40, 90),
       slots=(("mattress", _WHITE_FABRIC), ("pillows", ("cream", "fabric")))),
    _c("nightstand", (0.35, 0.4, 0.45), (0.45, 0.55, 0.6), _WOODS, ("wood",), _cabinet("drawers", 2), (8, 15),
       slots=(("handles", _STEEL),)),
    _c("wardrobe", (0.55, 0.9, 1.9), (0.65, 1.6, 2.2), _WOODS, ("wood",), _cabinet("doors"), (60, 120),
       slots=(("handles", _STEEL),)),
    _c("dresser", (0.45, 0.8, 0.75), (0.55, 1.4, 1.0), _WOODS, ("wood",), _cabinet("drawers", 3), (35, 60),
       slots=(("handles", _STEEL),)),
    # study / office
    _c("desk", (0.6, 1.0, 0.72), (0.75, 1.6, 0.76), _WOODS, ("wood",), _table(0.03, 0.04), (20, 40),
       slots=(("legs", _METAL_BLACK),)),
    _c("office_chair", (0.55, 0.55, 0.95), (0.65, 0.65, 1.15), ("black", "gray", "blue", "red"),
       ("fabric", "leather"), _office_chair, (10, 16), slots=(("legs", _METAL_BLACK),), movable=True),
    _c("bookshelf", (0.3, 0.7, 1.6), (0.4, 1.2, 2.0), _WOODS, ("wood",), _shelf(5), (30, 60)),
    _c("shelf", (0.3, 0.6, 0.9), (0.4, 1.2, 1.2), _WOODS, ("wood", "metal"), _shelf(3), (10, 25)),
    # living room
    _c("sofa", (0.85, 1.8, 0.8), (1.0, 2.6, 0.95), _FABRICS, ("fabric", "leather"), _sofa(True), (45, 90),
       slots=(("cushion", ("cream", "fabric")),)),
    _c("armchair", (0.75, 0.75, 0.8), (0.9, 0.95, 1.0), _FABRICS, ("fabric", "leather"), _sofa(True), (18, 35),
       slots=(("cushion", ("cream", "fabric")),)),
    _c("coffee_table", (0.5, 0.9, 0.4), (0.7, 1.3, 0.48), _WOODS + ("glass",), ("wood", "glass"),
       _table(0.04, 0.05), (12, 25), slots=(("legs", _METAL_BLACK),)),
    _c("side_table", (0.4, 0.4, 0.5), (0.55, 0.55, 0.65), _WOODS, ("wood",), _table(0.03, 0.04), (5, 10),
       slots=(("legs", ("dark brown", "wood")),)),
    _c("tv", (0.22, 0.9, 0.55), (0.28, 1.45, 0.85), ("black", "silver"), ("plastic",), _tv, (8, 20),
       slots=(("legs", _METAL_BLACK),), states=("on", "off")),
    _c("tv_stand", (0.4, 1.2, 0.45), (0.5, 1.9, 0.6), _WOODS, ("wood",), _cabinet("doors"), (20, 45),
       slots=(("handles", _STEEL),)),
    _c("rug", (1.4, 2.0, 0.01), (2.2, 3.0, 0.012), _FABRICS + ("purple", "orange"), ("carpet",), _rug, (3, 8)),
    # dining
    _c("dining_table", (0.85, 1.4, 0.74), (1.0, 2.0, 0.78), _WOODS + ("glass",), ("wood", "glass", "marble"),
       _table(0.04, 0.06), (30, 60), slots=(("legs", ("dark brown", "wood")),)),
    _c("dining_chair", (0.45, 0.45, 0.85), (0.52, 0.5, 1.0), _WOODS + ("red", "blue"), ("wood", "plastic"),
       _chair, (4, 8), slots=(("legs", ("dark brown", "wood")),), movable=True),
    _c("stool", (0.35, 0.35, 0.6), (0.4, 0.4, 0.75), _WOODS + ("red",), ("wood", "metal"), _stool, (3, 6),
       slots=(("legs", _METAL_BLACK),), movable=True),
    # kitchen
    _c("kitchen_counter", (0.6, 0.6, 0.9), (0.62, 1.2, 0.92), ("white", "gray", "navy", "light wood", "olive"),
       ("wood",), _counter("counter"), (40, 80), slots=(("top", ("white", "marble")),)),
    _c("sink", (0.6, 0.8, 0.9), (0.62, 1.0, 0.92), ("white", "gray", "navy"), ("wood",), _counter("sink"),
       (40, 70), slots=(("top", ("white", "marble")), ("fixture", _STEEL))),
    _c("stove", (0.6, 0.6, 0.9), (0.62, 0.76, 0.92), ("silver", "black", "white"), ("metal",),
       _counter("stove"), (50, 80), slots=(("top", ("black", "glass")),), states=("on", "off")),
    _c("fridge", (0.65, 0.6, 1.7), (0.75, 0.9, 1.95), ("silver", "white", "black"), ("metal",), _fridge,
       (60, 110), slots=(("handles", _STEEL),), states=("closed", "open")),
    _c("kitchen_island", (0.8, 1.2, 0.9), (1.0, 2.0, 0.92), ("white", "gray", "navy", "light wood"),
       ("wood",), _counter("counter"), (80, 150), slots=(("top", ("white", "marble")),)),
    _c("trash_can", (0.3, 0.3, 0.4), (0.4, 0.4, 0.7), ("silver", "black", "white"), ("metal", "plastic"),
       _trash_can, (2, 5)),
    # bathroom
    _c("toilet", (0.65, 0.38, 0.75), (0.72, 0.42, 0.82), ("white",), ("ceramic",), _toilet, (25, 40)),
    _c("bathtub", (0.7, 1.5, 0.5), (0.8, 1.8, 0.6), ("white", "cream"), ("ceramic",), _bathtub, (40, 80)),
    _c("shower", (0.8, 0.8, 2.0), (1.0, 1.0, 2.1), ("white", "gray"), ("tile",), _shower, (40, 70),
       slots=(("glass", _GLASS), ("fixture", _STEEL))),
    _c("bathroom_sink", (0.45, 0.6, 0.8), (0.5, 1.0, 0.88), ("white", "gray", "light wood", "navy"), ("wood",),
       _bathroom_sink, (20, 40), slots=(("top", _WHITE_CERAMIC), ("fixture", _STEEL))),
    _c("mirror", (0.03, 0.5, 0.6), (0.04, 0.9, 0.9), ("silver", "black", "light wood"), ("mirror",), _mirror,
       (4, 10), slots=(("glass", ("mirror", "mirror")),)),
    # laundry / storage / decor
    _c("washing_machine", (0.55, 0.6, 0.85), (0.62, 0.62, 0.9), ("white", "silver"), ("metal",), _washer,
       (60, 80), slots=(("handles", _GLASS),), states=("off", "on")),
    _c("cabinet", (0.4, 0.6, 0.8), (0.5, 1.0, 1.1), _WOODS, ("wood",), _cabinet("doors"), (20, 40),
       slots=(("handles", _STEEL),)),
    _c("plant", (0.35, 0.35, 0.6), (0.6, 0.6, 1.5), ("green", "olive"), ("plant",), _plant, (3, 15),
       slots=(("leaves", ("green", "plant")),)),
    _c("floor_lamp", (0.3, 0.3, 1.4), (0.45, 0.45, 1.8), ("white", "cream", "black", "beige"),
       ("fabric", "metal"), _floor_lamp, (3, 7), slots=(("legs", _METAL_BLACK),), states=("on", "off")),
    _c("picture", (0.03, 0.4, 0.3), (0.04, 1.2, 0.9), ("black", "light wood", "white"),
       ("wood",), _picture, (1, 5), slots=(("canvas", ("teal", "paper")),)),
    # small objects (movable, placed on surfaces)
    _c("table_lamp", (0.2, 0.2, 0.3), (0.3, 0.3, 0.5), ("white", "cream", "black", "blue", "green"),
       ("ceramic", "metal"), _table_lamp, (1, 3), slots=(("legs", _METAL_BLACK),), states=("on", "off"),
       movable=True, small=True),
    _c("cup", (0.07, 0.07, 0.09), (0.09, 0.09, 0.12), _SMALL_COLORS, ("ceramic", "glass", "plastic"), _cup,
       (0.2, 0.4), movable=True, small=True),
    _c("bowl", (0.14, 0.14, 0.06), (0.22, 0.22, 0.09), _SMALL_COLORS, ("ceramic", "glass", "wood"),
       _revolved([(0.5, 0.0), (1.0, 1.0)]), (0.3, 0.8), movable=True, small=True),
    _c("book", (0.15, 0.2, 0.02), (0.2, 0.28, 0.05), _SMALL_COLORS, ("paper",), _flat, (0.3, 1.0),
       movable=True, small=True),
    _c("vase", (0.1, 0.1, 0.2), (0.18, 0.18, 0.4), _SMALL_COLORS, ("ceramic", "glass"),
       _revolved([(0.6, 0.0), (1.0, 0.4), (0.45, 0.85), (0.55, 1.0)]), (0.5, 2.0), movable=True, small=True),
    _c("laptop", (0.22, 0.32, 0.2), (0.25, 0.38, 0.24), ("silver", "black", "gray"), ("metal", "plastic"),
       _laptop, (1.2, 2.5), movable=True, small=True, states=("open", "closed")),
    _c("remote", (0.15, 0.04, 0.02), (0.2, 0.05, 0.025), ("black", "gray", "silver"), ("plastic",), _flat,
       (0.1, 0.2), movable=True, small=True),
    _c("pillow", (0.35, 0.35, 0.1), (0.5, 0.5, 0.15), _FABRICS, ("fabric",), _flat, (0.3, 0.8),
       movable=True, small=True),
    _c("towel", (0.25, 0.3, 0.04), (0.35, 0.45, 0.08), _SMALL_COLORS, ("fabric",), _flat, (0.2, 0.6),
       movable=True, small=True),
    _c("box", (0.2, 0.2, 0.12), (0.4, 0.5, 0.3), ("brown", "white", "tan", "red", "blue"), ("paper", "plastic"),
       _flat, (0.3, 3.0), movable=True, small=True),
    _c("bottle", (0.06, 0.06, 0.2), (0.09, 0.09, 0.32), ("green", "blue", "white", "glass", "red"),
       ("glass", "plastic"), _revolved([(1.0, 0.0), (1.0, 0.65), (0.35, 0.85), (0.35, 1.0)]), (0.3, 1.2),
       movable=True, small=True),
    # doors (leaves are authored by the door writer, listed here for colour/material/mass)
    _c("door", (0.04, 0.8, 2.05), (0.04, 1.2, 2.05), ("white", "light wood", "brown", "gray"), ("wood",),
       _flat, (15, 30)),
)}


def get_category(name: str) -> Category:
    """Look up a category by name (KeyError lists the valid ones)."""
    try:
        return CATEGORIES[name]
    except KeyError:
        raise KeyError(f"unknown category {name!r}; valid: {', '.join(sorted(CATEGORIES))}") from None
