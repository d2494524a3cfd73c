"""Validating scene files: NVIDIA's asset validator plus our own navigation checks.

Our checks read the written file back through the environment layer
(:func:`vlnverse.scene.load_scene`, :func:`~vlnverse.scene.occupancy.build_occupancy`),
independently of the generator's own bookkeeping: every object labelled, every room
reachable for the agent, enough navigable area per room, no object inside a wall.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vlnverse.errors import DependencyNotInstalled, SceneError

logger = logging.getLogger(__name__)

#: Rule that flags any array longer than 64 in a text layer: inherent to ``--format usda``.
_TEXT_FORMAT_RULE = "UsdAsciiPerformanceChecker"


@dataclass(frozen=True)
class Finding:
    """One problem found in a scene file."""

    source: str  # "asset_validator" or "vlnverse"
    severity: str  # "error" or "warning"
    rule: str
    message: str
    at: str = ""


@dataclass
class ValidationReport:
    """All findings for one file plus a few measured facts."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    facts: dict = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "path": self.path, "ok": self.ok, "errors": len(self.errors), "warnings": len(self.warnings),
            "facts": self.facts,
            "findings": [f.__dict__ for f in self.findings],
        }


def _import_validator():
    """Import ``omni.asset_validator`` without letting it configure the root logger."""
    root = logging.getLogger()
    guard = None
    if not root.handlers:  # its CLI module calls logging.basicConfig(stdout, INFO) on import
        guard = logging.NullHandler()
        root.addHandler(guard)
    try:
        import omni.asset_validator as av
    except ImportError as exc:
        raise DependencyNotInstalled("omniverse-asset-validator", purpose="validating scenes") from exc
    finally:
        if guard is not None:
            root.removeHandler(guard)
    return av


def asset_validator_findings(path: str | Path) -> list[Finding]:
    """Run the asset validator's default rules on ``path``.

    FAILURE and ERROR count as errors, WARNING as warnings. For a text (``.usda``) file
    the rule that asks for binary crate storage is reported as a warning: the user
    chose the text format on purpose.
    """
    av = _import_validator()
    results = av.ValidationEngine().validate(str(path))
    findings = []
    text_file = str(path).endswith(".usda")
    for issue in results.issues():
        rule = issue.rule.__name__ if issue.rule is not None else "engine"
        name = issue.severity.name
        if name == "INFO":
            continue
        severity = "error" if name in ("ERROR", "FAILURE") else "warning"
        if text_file and rule == _TEXT_FORMAT_RULE:
            severity = "warning"
        at = ""
        if issue.at is not None:
            at = str(getattr(issue.at, "path", "") or "")
        findings.append(Finding("asset_validator", severity, rule, str(issue.message), at))
    return findings


def _labelled_prims(path: Path) -> list[str]:
    """Object prims under ``/World/Rooms/*/Objects`` that lack a semantic class label."""
    from pxr import Usd

    stage = Usd.Stage.Open(str(path))
    missing = []
    rooms = stage.GetPrimAtPath("/World/Rooms")
    if not rooms:
        return missing
    for room in rooms.GetChildren():
        objects = room.GetChild("Objects")
        if not objects:
            continue
        for obj in objects.GetChildren():
            attr = obj.GetAttribute("semantics:labels:class")
            if not attr or not attr.Get():
                missing.append(str(obj.GetPath()))
    return missing


def navigation_findings(path: str | Path, *, agent_radius: float = 0.30, agent_height: float = 1.50,
                        min_room_navigable: float = 0.5) -> tuple[list[Finding], dict]:
    """Our checks on a written scene; returns findings and measured facts."""
    from vlnverse.scene import load_scene
    from vlnverse.scene.occupancy import build_occupancy

    path = Path(path)
    findings: list[Finding] = []
    try:
        scene = load_scene(path)
        occ = build_occupancy(scene, agent_radius=agent_radius, agent_height=agent_height)
    except SceneError as exc:
        return [Finding("vlnverse", "error", "load", str(exc))], {}
    for prim in _labelled_prims(path):
        findings.append(Finding("vlnverse", "error", "labelled", "object prim has no semantic class label", prim))
    if not scene.rooms:
        findings.append(Finding("vlnverse", "error", "rooms", "scene has no annotated rooms"))
    area_cell = occ.resolution ** 2
    per_room = {}
    room_components = {}
    for k, room in enumerate(scene.rooms):
        cells = occ.navigable & (occ.room_map == k)
        per_room[room.room_id] = round(float(cells.sum()) * area_cell, 3)
        room_components[room.room_id] = set(np.unique(occ.components[cells]).tolist())
        if per_room[room.room_id] < min_room_navigable:
            findings.append(Finding("vlnverse", "error", "navigable_area",
                                    f"room {room.room_id} has {per_room[room.room_id]:.2f} m² navigable "
                                    f"(< {min_room_navigable} m²) for a {agent_radius} m agent"))
    shared = set.intersection(*room_components.values()) if room_components else set()
    if room_components and not shared:
        counts = np.bincount(occ.components[occ.navigable].ravel()) if occ.navigable.any() else np.zeros(1)
        main = int(np.argmax(counts))
        cut_off = sorted(r for r, comps in room_components.items() if main not in comps)
        findings.append(Finding("vlnverse", "error", "reachable",
                                f"rooms not reachable from the rest for a {agent_radius} m agent: "
                                f"{', '.join(cut_off)}"))
    findings.extend(_wall_penetrations(scene))
    facts = {
        "num_rooms": len(scene.rooms), "num_objects": len(scene.objects), "num_doors": len(scene.doors),
        "navigable_area_m2": round(float(occ.navigable.sum()) * area_cell, 3),
        "navigable_per_room_m2": per_room,
    }
    return findings, facts


def _wall_penetrations(scene, tolerance: float = 0.005) -> list[Finding]:
    """Room objects whose bounds overlap a wall's bounds by more than ``tolerance`` on every axis."""
    walls = []
    for prim in scene.prims:
        if prim.name.startswith("Wall_") and prim.object_index < 0:
            tri = scene.triangles[prim.triangle_slice].reshape(-1, 3)
            walls.append((prim.path, tri.min(axis=0), tri.max(axis=0)))
    out = []
    for obj in scene.objects:
        if obj.prim_path.startswith("/World/Doors/"):
            continue  # door leaves sit in their wall openings by design
        for wall_path, lo, hi in walls:
            depth = np.minimum(obj.aabb_max, hi) - np.maximum(obj.aabb_min, lo)
            if np.all(depth > tolerance):
                out.append(Finding("vlnverse", "error", "wall_penetration",
                                   f"object {obj.object_id} overlaps wall {wall_path} "
                                   f"by {float(depth.min()):.3f} m", obj.prim_path))
                break
    return out


def validate_scene(path: str | Path, *, asset_validator: bool = True, agent_radius: float = 0.30,
                   min_room_navigable: float = 0.5) -> ValidationReport:
    """Validate one scene file with both the asset validator and our checks."""
    path = Path(path)
    if not path.is_file():
        raise SceneError(f"scene file not found: {path}")
    report = ValidationReport(str(path))
    if asset_validator:
        report.findings.extend(asset_validator_findings(path))
    findings, facts = navigation_findings(path, agent_radius=agent_radius, min_room_navigable=min_room_navigable)
    report.findings.extend(findings)
    report.facts = facts
    return report
