"""A pinned walk: fixed action sequences on a bundled scene give the recorded poses, collisions,
contacts, measures, rewards and observations.

The expected values (``data/step_golden.json.gz``) were recorded from the env before its step
was made cheaper (glided motion prefixes, the oracle's and the measures' fast paths), so a
speed-up that changes what an agent experiences fails here. Re-record deliberately, after
a change that is meant to alter behaviour: ``python -m tests.envs.test_step_golden``.

Re-recorded when the default physics rate went from 120 Hz to 60 Hz (Isaac Sim's
``physics_dt``; issue 31), compared step by step with the 120 Hz recording first: the same
actions; every Strict and Tel-Hop end reason, collision event and step identical; Tel-Hop
poses identical, Strict poses within 1.9 cm, velocity within 0.4 mm, waypoint within
1.3 cm; the 160-step discrete Slide walk, which slides along walls throughout, keeps its
52 collision events but moves some by a step and drifts up to 16 cm (its depth images
follow the poses).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from vlnverse.envs.nav_env import NavEnv

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "assets" / "scenes" / "scene_0002" / "scene.usdc"
GOLDEN = Path(__file__).parent / "data" / "step_golden.json.gz"
SENSORS = {"depth": {"kind": "depth", "width": 24, "height": 24}}
#: (name, action space, physics mode, steps): every path through the simulator's step.
WALKS = (
    ("discrete_slide", "discrete", "slide", 160),
    ("discrete_strict", "discrete", "strict", 80),
    ("discrete_tel_hop", "discrete", "tel_hop", 60),
    ("velocity_slide", "velocity", "slide", 60),
    ("waypoint_slide", "waypoint", "slide", 30),
)
#: Poses and float measures agree to this (the glide reproduces the physics' motor
#: integration to ~1e-14 m); every discrete field must match exactly.
FLOAT_TOLERANCE = 1e-9


def _actions(env: NavEnv, seed: int, steps: int) -> list:
    """Mostly-forward random discrete actions (as a random walker bumps along walls), or
    seeded samples of a continuous space."""
    rng = np.random.default_rng(seed)
    if env.action_spec.name == "discrete":
        return [int(a) for a in rng.choice([1, 1, 1, 2, 3], size=steps)]
    env.action_space.seed(seed)
    return [env.action_space.sample() for _ in range(steps)]


def _plain(value):
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def walk(action_space: str, mode: str, steps: int) -> list[dict]:
    """The per-step record of a walk: what the agent observes and what ``info`` measures."""
    env = NavEnv(SCENE, sensors=SENSORS, physics=mode, action_space=action_space, renderer="tiny")
    try:
        env.reset(seed=0)
        records = []
        for action in _actions(env, 0, steps):
            obs, reward, terminated, truncated, info = env.step(action)
            records.append({
                "action": _plain(action), "reward": reward, "terminated": terminated, "truncated": truncated,
                "depth_sha1": hashlib.sha1(np.ascontiguousarray(obs["depth"]).tobytes()).hexdigest(),
                "bump": int(obs["bump"]),
                **{key: _plain(info[key]) for key in (
                    "pose", "commanded_pose", "collision", "displacement", "collisions", "contacts",
                    "contact_categories", "snapped", "geodesic_distance", "distance_to_goal", "room_type",
                    "oracle_action", "fail_reason", "success", "steps", "path_length")},
            })
            if terminated or truncated:
                env.reset()
        return records
    finally:
        env.close()


def _assert_same(got, expected, where: str) -> None:
    if isinstance(expected, float) and isinstance(got, float):
        assert got == pytest.approx(expected, abs=FLOAT_TOLERANCE, rel=0.0), where
    elif isinstance(expected, list) and isinstance(got, list):
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            _assert_same(g, e, f"{where}[{k}]")
    elif isinstance(expected, dict) and isinstance(got, dict):  # a task's info: its floats get the tolerance too
        assert got.keys() == expected.keys(), where
        for key, e in expected.items():
            _assert_same(got[key], e, f"{where}.{key}")
    else:
        assert got == expected, where


@pytest.mark.slow
@pytest.mark.parametrize("name, action_space, mode, steps", WALKS, ids=[w[0] for w in WALKS])
def test_walk_matches_the_recorded_one(name, action_space, mode, steps):
    expected = json.loads(gzip.decompress(GOLDEN.read_bytes()))[name]
    got = json.loads(json.dumps(walk(action_space, mode, steps)))
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        for key in e:
            _assert_same(g[key], e[key], f"{name} step {k} {key}")


def test_the_walks_cover_glides_physics_contacts_and_collisions():
    golden = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    slide = golden["discrete_slide"]
    assert sum(r["collision"] for r in slide) >= 3
    assert sum(bool(r["contacts"]) for r in slide) >= 20
    assert len({r["oracle_action"] for r in slide}) >= 3
    assert any(r["terminated"] for r in golden["discrete_strict"])


if __name__ == "__main__":
    records = {name: walk(space, mode, steps) for name, space, mode, steps in WALKS}
    GOLDEN.write_bytes(gzip.compress(json.dumps(records, separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {GOLDEN}")
