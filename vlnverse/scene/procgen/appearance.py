"""Named colours and materials: what instructions say ("the red cup") and what USD renders.

Each material name maps to UsdPreviewSurface parameters and to physics-material
friction/restitution, so a "wooden" table looks and behaves like wood.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Colour name -> linear RGB.
COLORS: dict[str, tuple[float, float, float]] = {
    "white": (0.90, 0.90, 0.88),
    "black": (0.04, 0.04, 0.04),
    "gray": (0.35, 0.35, 0.36),
    "silver": (0.70, 0.70, 0.72),
    "red": (0.62, 0.06, 0.05),
    "blue": (0.05, 0.15, 0.55),
    "navy": (0.02, 0.04, 0.20),
    "green": (0.08, 0.40, 0.10),
    "olive": (0.25, 0.30, 0.08),
    "teal": (0.02, 0.35, 0.35),
    "yellow": (0.85, 0.70, 0.08),
    "orange": (0.85, 0.30, 0.03),
    "pink": (0.85, 0.45, 0.55),
    "purple": (0.30, 0.08, 0.45),
    "brown": (0.28, 0.14, 0.06),
    "beige": (0.70, 0.60, 0.45),
    "cream": (0.85, 0.80, 0.65),
    "tan": (0.55, 0.40, 0.25),
    "dark brown": (0.12, 0.06, 0.03),
    "light wood": (0.62, 0.45, 0.28),
    "glass": (0.80, 0.88, 0.90),
    "mirror": (0.95, 0.95, 0.95),
}


@dataclass(frozen=True)
class MaterialSpec:
    """Render and physics parameters of a named material."""

    roughness: float
    metallic: float
    static_friction: float
    dynamic_friction: float
    restitution: float
    opacity: float = 1.0


MATERIALS: dict[str, MaterialSpec] = {
    "wood": MaterialSpec(0.6, 0.0, 0.50, 0.40, 0.20),
    "metal": MaterialSpec(0.35, 1.0, 0.60, 0.45, 0.15),
    "fabric": MaterialSpec(0.95, 0.0, 0.80, 0.70, 0.05),
    "leather": MaterialSpec(0.55, 0.0, 0.70, 0.60, 0.10),
    "plastic": MaterialSpec(0.45, 0.0, 0.45, 0.35, 0.35),
    "ceramic": MaterialSpec(0.25, 0.0, 0.50, 0.40, 0.25),
    "glass": MaterialSpec(0.05, 0.0, 0.40, 0.30, 0.30, opacity=0.35),
    "marble": MaterialSpec(0.20, 0.0, 0.55, 0.45, 0.20),
    "stone": MaterialSpec(0.80, 0.0, 0.70, 0.60, 0.10),
    "paper": MaterialSpec(0.90, 0.0, 0.50, 0.40, 0.05),
    "mirror": MaterialSpec(0.02, 1.0, 0.40, 0.30, 0.30),
    "plaster": MaterialSpec(0.90, 0.0, 0.60, 0.50, 0.10),
    "tile": MaterialSpec(0.30, 0.0, 0.50, 0.40, 0.20),
    "carpet": MaterialSpec(1.00, 0.0, 0.90, 0.80, 0.02),
    "plant": MaterialSpec(0.80, 0.0, 0.60, 0.50, 0.10),
}

#: Wall paints, floor finishes per room type (colour, material).
WALL_PAINTS = ("white", "cream", "beige", "gray", "light wood", "teal", "pink", "olive")
FLOOR_FINISHES = {
    "bathroom": (("white", "tile"), ("gray", "tile"), ("beige", "stone")),
    "kitchen": (("white", "tile"), ("gray", "stone"), ("beige", "tile"), ("light wood", "wood")),
    "laundry": (("gray", "tile"), ("white", "tile")),
    "default": (("light wood", "wood"), ("brown", "wood"), ("dark brown", "wood"),
                ("beige", "carpet"), ("gray", "carpet"), ("white", "marble")),
}


def material_key(color: str, material: str) -> str:
    """The USD prim name of the look for a (colour, material) pair."""
    return f"{material}_{color}".replace(" ", "_")
