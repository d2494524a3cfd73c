"""Procedural, tileable, deterministic textures per material class, and which class a prim is.

A texture is a greyscale *detail* map (brightness around 1) that modulates a prim's
display colour: wood planks and grain, carpet pile, fabric weave, tile grout, marble
veins, brushed metal and so on. Every texture tiles (noise is made periodic by
filtering white noise in the Fourier domain) and is built from a fixed seed, so the same
bytes come out in every process. ``TILE_METRES`` is how much of the world one tile covers.
"""

from __future__ import annotations

import functools

import numpy as np

from vlnverse.cache import cached
from vlnverse.scene.types import Scene
from vlnverse.sim.semantics import structural_category

#: Texture size in texels (square, a power of two for the mip chain).
TEXTURE_SIZE = 256
#: Material classes, in texture-array layer order ("plain" has no detail).
MATERIALS = ("plain", "wood", "carpet", "fabric", "leather", "tile", "marble", "stone", "plaster",
             "metal", "glass", "ceramic", "plastic", "paper", "plant")
#: World metres covered by one tile of each class's texture.
TILE_METRES = {"wood": 1.2, "carpet": 0.6, "fabric": 0.3, "leather": 0.5, "tile": 1.2, "marble": 1.6,
               "stone": 1.2, "plaster": 2.0, "metal": 0.8, "glass": 1.0, "ceramic": 0.6, "plastic": 0.8,
               "paper": 0.4, "plant": 0.4, "plain": 1.0}
#: Names that mean a class (e.g. a bound look ``mirror_silver``).
ALIASES = {"mirror": "glass", "cloth": "fabric", "rug": "carpet", "concrete": "stone", "granite": "stone",
           "porcelain": "ceramic", "steel": "metal", "aluminium": "metal", "cardboard": "paper"}
#: Floors of these rooms are tiled when the scene says nothing of their material.
WET_ROOMS = ("bathroom", "kitchen", "laundry", "toilet")
#: Structural categories → class when the scene names no material.
STRUCTURE_DEFAULTS = {"floor": "wood", "wall": "plaster", "ceiling": "plaster", "window": "glass",
                      "door": "wood", "stair": "wood", "roof": "plaster", "ground": "stone"}


def material_class(name: str | None) -> str | None:
    """The class a material name means (its first word: ``wood_dark_brown`` → ``wood``), or None."""
    if not name:
        return None
    word = name.strip().lower().replace("-", "_").replace(" ", "_").split("_")[0]
    word = ALIASES.get(word, word)
    return word if word in MATERIALS else None


def prim_materials(scene: Scene) -> list[str]:
    """The material class of every prim: its bound look, its object's ``vlnverse:material``,
    else a default by structure (tiled floors in wet rooms, plaster walls, glass windows)."""
    classes = []
    for prim in scene.prims:
        found = material_class(getattr(prim, "material", ""))
        if found is None and prim.object_index >= 0:
            found = material_class(scene.objects[prim.object_index].material)
        if found is None:
            category = structural_category(prim)
            found = STRUCTURE_DEFAULTS.get(category, "plain")
            room = scene.rooms[prim.room_index].room_type if 0 <= prim.room_index < len(scene.rooms) else ""
            if category == "floor" and room in WET_ROOMS:
                found = "tile"
        classes.append(found)
    return classes


def _noise(rng: np.random.Generator, n: int, scale: float, stretch: float = 1.0, beta: float = 2.0) -> np.ndarray:
    """Periodic fractal noise (n × n, zero mean, unit deviation): white noise with a 1/f^beta
    spectrum from frequency ``scale`` (cycles per tile) up, ``stretch`` times finer across rows."""
    freq = np.fft.fftfreq(n) * n
    fy, fx = np.meshgrid(freq * stretch, freq, indexing="ij")
    radius = np.hypot(fx, fy)
    spectrum = np.where(radius > 0, np.maximum(radius, scale) ** (-beta / 2.0 - 0.5), 0.0)
    field = np.fft.ifft2(np.fft.fft2(rng.standard_normal((n, n))) * spectrum).real
    return (field - field.mean()) / max(field.std(), 1e-12)


def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Texel coordinates in [0, 1): (v, u) grids."""
    t = np.arange(n) / n
    return np.meshgrid(t, t, indexing="ij")


def _seam(coord: np.ndarray, count: int, width: float) -> np.ndarray:
    """1 near the ``count`` evenly spaced lines across ``coord`` ∈ [0, 1), fading to 0 within ``width``."""
    phase = (coord * count) % 1.0
    distance = np.minimum(phase, 1.0 - phase) / count
    return np.clip(1.0 - distance / width, 0.0, 1.0)


def _wood(rng, n):
    v, u = _grid(n)
    planks = 6
    row = np.floor(v * planks).astype(int) % planks
    offsets = rng.uniform(0.0, 1.0, planks)
    tone = rng.normal(0.0, 0.07, planks)[row]
    grain = 0.06 * _noise(rng, n, 2.0, stretch=8.0) + 0.04 * np.sin(2 * np.pi * (v * planks * 3 + 0.3 * _noise(rng, n, 3.0)))
    ends = _seam((u + offsets[row]) % 1.0, 1, 0.004)
    return 1.0 + tone + grain - 0.35 * np.maximum(_seam(v, planks, 0.003), ends)


def _tile(rng, n):
    v, u = _grid(n)
    tiles = 4
    tone = rng.normal(0.0, 0.03, (tiles, tiles))[(v * tiles).astype(int), (u * tiles).astype(int)]
    grout = np.maximum(_seam(u, tiles, 0.004), _seam(v, tiles, 0.004))
    return 1.0 + tone + 0.02 * _noise(rng, n, 16.0) - 0.3 * grout


def _marble(rng, n):
    v, u = _grid(n)
    veins = np.abs(np.sin(2 * np.pi * (u + v) * 2 + 2.5 * _noise(rng, n, 2.0)))
    return 1.05 - 0.25 * np.clip(1.0 - veins / 0.15, 0.0, 1.0) + 0.03 * _noise(rng, n, 4.0)


def _fabric(rng, n):
    v, u = _grid(n)
    weave = np.sin(2 * np.pi * u * 32) * np.sin(2 * np.pi * v * 32)
    return 1.0 + 0.08 * weave + 0.05 * _noise(rng, n, 8.0)


GENERATORS = {
    "plain": lambda rng, n: np.ones((n, n)),
    "wood": _wood,
    "carpet": lambda rng, n: 1.0 + 0.12 * _noise(rng, n, 48.0, beta=0.5) + 0.05 * _noise(rng, n, 3.0),
    "fabric": _fabric,
    "leather": lambda rng, n: 1.0 + 0.07 * _noise(rng, n, 24.0, beta=1.0),
    "tile": _tile,
    "marble": _marble,
    "stone": lambda rng, n: 1.0 + 0.12 * _noise(rng, n, 4.0, beta=1.5),
    "plaster": lambda rng, n: 1.0 + 0.025 * _noise(rng, n, 8.0, beta=1.0),
    "metal": lambda rng, n: 1.0 + 0.06 * _noise(rng, n, 4.0, stretch=24.0, beta=1.0),
    "glass": lambda rng, n: 1.0 + 0.05 * np.cos(2 * np.pi * (_grid(n)[0] + _grid(n)[1])),
    "ceramic": lambda rng, n: 1.0 + 0.015 * _noise(rng, n, 6.0),
    "plastic": lambda rng, n: 1.0 + 0.015 * _noise(rng, n, 12.0),
    "paper": lambda rng, n: 1.0 + 0.04 * _noise(rng, n, 32.0, beta=0.8),
    "plant": lambda rng, n: 1.0 + 0.25 * np.tanh(1.5 * _noise(rng, n, 6.0, beta=2.5)),
}


@functools.lru_cache(maxsize=2)
def texture_layers(size: int = TEXTURE_SIZE) -> np.ndarray:
    """(len(MATERIALS), size, size) uint8 detail maps: texel / 128 is the brightness factor.

    Built once per process and size, and kept in the disk cache for other processes (every
    renderer uploads the same bytes; building them costs more than the rest of an env), so
    the array is read-only."""
    out = cached("texture_layers", (size, MATERIALS), lambda: _build_layers(size))
    out.flags.writeable = False
    return out


def _build_layers(size: int) -> np.ndarray:
    layers = []
    for index, name in enumerate(MATERIALS):
        factor = GENERATORS[name](np.random.default_rng(1000 + index), size)
        layers.append(np.clip(np.round(factor * 128.0), 0, 255).astype(np.uint8))
    return np.stack(layers)
