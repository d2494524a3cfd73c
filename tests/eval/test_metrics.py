"""Per-episode metrics against hand-computed values on small trajectories."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlnverse.config import config_from_mapping
from vlnverse.errors import ConfigError, MetricsError
from vlnverse.eval.scoring.episode_record import EpisodeRecord, MetricsConfig
from vlnverse.eval.scoring.metrics import compute_episode_metrics, compute_metrics_batch


def euclid_fn(goals):
    goals = np.asarray(goals, dtype=float)

    def fn(points):
        return np.linalg.norm(points[:, None, :] - goals[None, :, :], axis=2)

    return fn


def line(*xs, y=0.0):
    return np.array([[x, y, 0.0] for x in xs], dtype=float)


def record(positions, goals, L, *, actions=None, stops=None, scale=1.0, **kw):
    positions = np.asarray(positions, dtype=float)
    goals = np.atleast_2d(np.asarray(goals, dtype=float))
    if actions is None:
        actions = ["forward"] * (len(positions) - 1) + ["stop"]
    if stops is None:
        stops = (len(positions) - 1,)
    base = euclid_fn(goals)
    return EpisodeRecord(
        positions=positions,
        goals=goals,
        geodesic_distance=L,
        actions=actions,
        stops=stops,
        geodesic_fn=lambda p: scale * base(p),
        **kw,
    )


def test_straight_success_tl_ne_osr_and_spl_when_path_shorter_than_L():
    rec = record(line(0, 1, 2, 3), [5, 0, 0], L=5.0)
    m = compute_episode_metrics(rec)
    assert m.TL == pytest.approx(3.0)
    assert m.NE == pytest.approx(2.0)
    assert m.NE_euclidean == pytest.approx(2.0)
    assert m.SR == 1.0 and m.OSR == 1.0
    # P = 3 < L = 5: S * L / max(P, L) = 1.
    assert m.SPL == pytest.approx(1.0)
    assert m.steps == 4 and m.nav_steps == 3
    assert m.nDTW is None and m.SDTW is None and m.CR is None
    assert m.SR_n is None and "SR_All" not in m.to_dict()


def test_geodesic_and_euclidean_ne_are_separate_and_success_uses_geodesic():
    # The geodesic detour doubles every distance: NE 4 m -> failure, NE_euclidean 2 m.
    m = compute_episode_metrics(record(line(0, 1, 2, 3), [5, 0, 0], L=10.0, scale=2.0))
    assert m.NE == pytest.approx(4.0)
    assert m.NE_euclidean == pytest.approx(2.0)
    assert m.SR == 0.0 and m.SPL == 0.0
    # Geodesic distances along the way are 10, 8, 6, 4 m: never within 3 m.
    assert m.OSR == 0.0


def test_success_distance_is_strict():
    at_edge = record(line(0, 1, 2), [5, 0, 0], L=5.0)  # final distance exactly 3.0
    assert compute_episode_metrics(at_edge).SR == 0.0
    assert compute_episode_metrics(at_edge, MetricsConfig(success_distance=3.0001)).SR == 1.0


def test_detour_spl_and_oracle_success_without_stop():
    # Walk 0 -> 4 -> 0 -> 2 (TL 10); goal at 2 (L = 2); success.
    pos = line(0, 4, 0, 2)
    m = compute_episode_metrics(record(pos, [2, 0, 0], L=2.0))
    assert m.TL == pytest.approx(10.0)
    assert m.SPL == pytest.approx(2.0 / 10.0)
    # Same walk without STOP (step budget): SR 0, SPL 0, but OSR 1.
    m2 = compute_episode_metrics(
        record(pos, [2, 0, 0], L=2.0, actions=["forward"] * 3, stops=(), fail_reason="step_budget")
    )
    assert (m2.SR, m2.SPL, m2.OSR) == (0.0, 0.0, 1.0)
    assert m2.fail_reason == "step_budget"
    assert m2.nav_steps == 3


def test_spl_zero_length_reference():
    # Start on the goal and stop at once: max(P, L) = 0 -> SPL = S = 1.
    m = compute_episode_metrics(record(line(1.0), [1, 0, 0], L=0.0, actions=["stop"], stops=(0,)))
    assert m.TL == 0.0 and m.SR == 1.0 and m.SPL == 1.0
    # L = 0 but the agent wandered 2 m before stopping on the goal: S * 0 / 2 = 0.
    m2 = compute_episode_metrics(record(line(1, 2, 1), [1, 0, 0], L=0.0))
    assert m2.SR == 1.0 and m2.SPL == 0.0


def test_collision_rate_and_zero_steps():
    rec = record(
        line(0, 0.25, 0.25, 0.25),
        [0.5, 0, 0],
        L=0.5,
        actions=["forward", "forward", "turn_left", "stop"],
        stops=(3,),
        collisions=[True, True, False, False],
    )
    m = compute_episode_metrics(rec)
    assert m.collision_count == 2.0 and m.nav_steps == 3
    assert m.CR == pytest.approx(2.0 / 3.0)
    # No action at all: CR is 0 by definition (no division by zero).
    m0 = compute_episode_metrics(
        record(line(0.0), [0.5, 0, 0], L=0.5, actions=[], stops=(), collisions=[])
    )
    assert m0.CR == 0.0 and m0.steps == 0 and m0.nav_steps == 0
    # Only STOP: also no navigation action.
    m1 = compute_episode_metrics(
        record(line(0.0), [0.5, 0, 0], L=0.5, actions=["stop"], stops=(0,), collisions=[0])
    )
    assert m1.CR == 0.0 and m1.steps == 1 and m1.nav_steps == 0


def lh_record(reached_pattern):
    """Three goals on the x axis; the k-th STOP lands on goal k when reached, else 10 m off."""
    goals = np.array([[10.0, 0, 0], [20.0, 0, 0], [30.0, 0, 0]])
    pos = [[0.0, 0, 0]]
    stops = []
    for k, ok in enumerate(reached_pattern):
        pos.append([goals[k, 0], 0.0 if ok else 10.0, 0.0])
        stops.append(len(pos) - 1)
    actions = []
    for _ in stops:
        actions += ["forward", "stop"]
    return EpisodeRecord(
        positions=np.array(pos),
        goals=goals,
        geodesic_distance=30.0,
        actions=actions,
        stops=tuple(stops),
        geodesic_fn=euclid_fn(goals),
    )


def test_sr_n_is_conditional_and_sr_all_is_final_goal_success():
    m = compute_episode_metrics(lh_record([True, False, True]))
    assert m.SR_n == (1.0, 0.0, None)  # SR_3 undefined: goal 2 was missed
    # SR_All (paper §3.4): the final STOP was within d_s of the final goal.
    assert m.SR_All == 1.0 and m.SR == 1.0 and m.SR_Ordered == 0.0
    d = m.to_dict()
    assert d["SR_1"] == 1.0 and d["SR_2"] == 0.0 and d["SR_3"] is None
    assert d["SR_All"] == 1.0 and d["SR_Ordered"] == 0.0

    m_all = compute_episode_metrics(lh_record([True, True, True]))
    assert m_all.SR_n == (1.0, 1.0, 1.0) and m_all.SR_All == m_all.SR == m_all.SR_Ordered == 1.0

    m_first_missed = compute_episode_metrics(lh_record([False, True, True]))
    assert m_first_missed.SR_n == (0.0, None, None)
    assert m_first_missed.SR_All == 1.0 and m_first_missed.SR_Ordered == 0.0

    m_last_missed = compute_episode_metrics(lh_record([True, True, False]))
    assert m_last_missed.SR_All == m_last_missed.SR == m_last_missed.SPL == m_last_missed.SR_Ordered == 0.0

    # Only two STOPs for three goals (episode ran out of steps): goal 3 not reached.
    m_short = compute_episode_metrics(lh_record([True, True]))
    assert m_short.SR_n == (1.0, 1.0, 0.0) and m_short.SR_All == 0.0 and m_short.SR_Ordered == 0.0


def test_table6_pattern_sr_all_above_sr_2_is_possible():
    """Table 6 reports SR_All 20.7 with SR_1 34.0, SR_2 12.2: final-goal success can exceed
    the chained rate, which "every goal reached" could never do."""
    patterns = [[True, False, True], [False, True, True], [True, True, True], [False, False, False]]
    ms = [compute_episode_metrics(lh_record(p)) for p in patterns]
    sr_all = np.mean([m.SR_All for m in ms])
    sr_ordered = np.mean([m.SR_Ordered for m in ms])
    chained = np.mean([m.SR_n[0] for m in ms]) * np.mean([m.SR_n[1] for m in ms if m.SR_n[1] is not None])
    assert sr_all == 0.75 and sr_ordered == 0.25 and sr_all > chained


def test_multi_goal_oracle_success_is_the_final_goals_and_never_below_sr():
    goals = np.array([[10.0, 0, 0], [0.0, 0, 0]])
    # Starts on the final goal's side, never comes within d_s of goal 1, STOPs twice near goal 2:
    # SR (= SR_All) 1, so OSR must be 1 too (an ordered oracle gave 0 here, OSR < SR).
    pos = line(5, 0.5, 0.5)
    rec = EpisodeRecord(pos, goals, 20.0, actions=["forward", "stop", "stop"], stops=[1, 2],
                        geodesic_fn=euclid_fn(goals))
    m = compute_episode_metrics(rec)
    assert (m.SR, m.SR_All, m.SR_Ordered, m.OSR) == (1.0, 1.0, 0.0, 1.0)
    # Passes the final goal on the way out, ends far away without STOP: OSR 1, SR 0.
    pos2 = line(0, 5, 10)
    rec2 = EpisodeRecord(pos2, goals, 20.0, actions=["forward"] * 2, geodesic_fn=euclid_fn(goals))
    assert (compute_episode_metrics(rec2).SR, compute_episode_metrics(rec2).OSR) == (0.0, 1.0)
    # Never near the final goal: OSR 0.
    rec3 = EpisodeRecord(line(8, 12), goals, 20.0, actions=["forward"], geodesic_fn=euclid_fn(goals))
    assert compute_episode_metrics(rec3).OSR == 0.0


def test_ndtw_r4r_grid_example_without_resampling():
    # google-research r4r/dtw.py doctest: 3x4 grid, DTW = 3.0, nDTW = exp(-3 / (3 * 4)).
    prediction = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], dtype=float)
    reference = np.array([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 2, 0]], dtype=float)
    cfg = MetricsConfig(resample_spacing=None)
    rec = record(prediction, reference[-1], L=4.0, reference_path=reference)
    m = compute_episode_metrics(rec, cfg)
    assert m.nDTW == pytest.approx(0.77880078307140488, abs=1e-12)
    assert -math.log(m.nDTW) * 3.0 * 4 == pytest.approx(3.0)
    # Final distance 2 m < 3 m and STOP issued: SDTW = nDTW.
    assert m.SR == 1.0 and m.SDTW == pytest.approx(m.nDTW)
    batch = compute_metrics_batch([rec, rec], cfg)
    assert [b.nDTW for b in batch] == pytest.approx([m.nDTW, m.nDTW], abs=1e-12)
    # SDTW is gated by the episode's success: no STOP -> 0 while nDTW is unchanged.
    no_stop = record(
        prediction,
        reference[-1],
        L=4.0,
        reference_path=reference,
        actions=["forward"] * 3,
        stops=(),
    )
    m2 = compute_episode_metrics(no_stop, cfg)
    assert m2.nDTW == pytest.approx(m.nDTW) and m2.SDTW == 0.0


def test_ndtw_resampling_makes_sampling_density_irrelevant():
    # Reference sampled every 1 m; the agent follows it exactly with 0.1 m steps and
    # pauses (repeated poses). Resampled, both become the same point sequence.
    reference = line(0, 1, 2, 3, 4)
    xs = np.concatenate([np.linspace(0, 2, 21), [2.0, 2.0, 2.0], np.linspace(2, 4, 21)])
    pos = line(*xs)
    rec = record(pos, [4, 0, 0], L=4.0, reference_path=reference)
    m = compute_episode_metrics(rec)  # default 0.25 m spacing
    assert m.nDTW == pytest.approx(1.0, abs=1e-9)
    raw = compute_episode_metrics(rec, MetricsConfig(resample_spacing=None))
    assert raw.nDTW < 0.99
    # An offset path 1 m to the side: every resampled point costs exactly 1 m and the
    # diagonal alignment is optimal, so DTW = |R| * 1 and nDTW = exp(-1 / 3).
    side = record(line(0, 4, y=1.0), [4, 1, 0], L=4.0, reference_path=reference)
    assert compute_episode_metrics(side).nDTW == pytest.approx(math.exp(-1.0 / 3.0), abs=1e-9)


def test_planar_ignores_constant_height_offset():
    reference = line(0, 1, 2)
    pos = line(0, 1, 2) + np.array([0.0, 0.0, 1.2])
    rec = record(pos, [2, 0, 0], L=2.0, reference_path=reference)
    assert compute_episode_metrics(rec).nDTW == pytest.approx(1.0)
    m3d = compute_episode_metrics(rec, MetricsConfig(planar=False))
    assert m3d.nDTW < 1.0
    assert m3d.NE_euclidean == pytest.approx(1.2)


def test_batch_equals_single_on_random_episodes():
    rng = np.random.default_rng(7)
    recs = []
    for k in range(40):
        n = int(rng.integers(1, 60))
        pos = np.cumsum(rng.normal(0, 0.3, size=(n, 3)) * [1, 1, 0], axis=0)
        ref = np.cumsum(rng.normal(0, 0.5, size=(int(rng.integers(1, 30)), 3)) * [1, 1, 0], axis=0)
        goal = ref[-1]
        recs.append(
            record(
                pos,
                goal,
                L=float(np.linalg.norm(goal)),
                reference_path=ref if k % 5 else None,
                actions=["forward"] * n,
                stops=(n - 1,),
                collisions=rng.random(n) < 0.2,
            )
        )
    batch = compute_metrics_batch(recs)
    for rec, b in zip(recs, batch, strict=True):
        s = compute_episode_metrics(rec)
        for key, value in s.to_dict().items():
            if isinstance(value, float):
                assert b.to_dict()[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
            else:
                assert b.to_dict()[key] == value, key


def test_from_mapping_jsonl_record_derives_stops_and_passes_through():
    data = {
        "episode_id": 17,
        "task": "fine",
        "split": "val_unseen",
        "physics": "strict",
        "trajectory": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [2, 0, 0]],
        "actions": [1, 1, 0],  # VLN-CE ids: 1 forward, 0 stop (pose after STOP repeated)
        "collisions": [False, True, False],
        "goals": [{"position": [3, 0, 0], "radius": 3.0}],
        "info": {"geodesic_distance": 3.0},
        "reference_path": [[0, 0, 0], [3, 0, 0]],
        "fail_reason": "stop",
        "agent_trace": {"tokens": {"prompt": 100, "completion": 20}, "cost": 0.004},
    }
    rec = EpisodeRecord.from_mapping(data, geodesic_fn=euclid_fn([[3, 0, 0]]))
    assert rec.stops == (2,)
    m = compute_episode_metrics(rec)
    assert m.SR == 1.0 and m.NE == pytest.approx(1.0) and m.CR == pytest.approx(0.5)
    assert (m.tokens, m.tokens_prompt, m.tokens_completion, m.cost) == (120, 100, 20, 0.004)
    d = m.to_dict()
    assert d["episode_id"] == "17" and d["task"] == "fine" and d["physics"] == "strict"
    assert d["fail_reason"] == "stop" and d["tokens"] == 120


def test_from_mapping_with_precomputed_distances_and_single_goal_dict():
    data = {
        "trajectory": [[0, 0, 0], [1, 0, 0]],
        "goals": {"position": [1, 0, 0]},
        "geodesic_distance": 1.0,
        "actions": ["forward", "stop"],
        "stops": [1],
        "goal_distances": [1.5, 0.2],
    }
    m = compute_episode_metrics(data)
    assert m.NE == 0.2 and m.SR == 1.0 and m.SPL == 1.0


def test_bad_input_raises_metrics_error():
    goal = [[1.0, 0, 0]]
    with pytest.raises(MetricsError, match="positions is empty"):
        EpisodeRecord(np.zeros((0, 3)), goal, 1.0)
    with pytest.raises(MetricsError, match="NaN"):
        EpisodeRecord(np.array([[0, 0, 0], [np.nan, 0, 0]]), goal, 1.0)
    with pytest.raises(MetricsError, match="shape"):
        EpisodeRecord(np.zeros((3, 2)), goal, 1.0)
    with pytest.raises(MetricsError, match="geodesic_distance"):
        EpisodeRecord(np.zeros((1, 3)), goal, float("inf"))
    with pytest.raises(MetricsError, match="stops"):
        EpisodeRecord(np.zeros((2, 3)), goal, 1.0, actions=["stop"], stops=(5,))
    with pytest.raises(MetricsError, match="collision flags"):
        EpisodeRecord(np.zeros((2, 3)), goal, 1.0, actions=["forward"], collisions=[0, 1])
    with pytest.raises(MetricsError, match="reference_path contains NaN"):
        EpisodeRecord(np.zeros((2, 3)), goal, 1.0, reference_path=[[0, 0, 0], [0, np.nan, 0]])
    with pytest.raises(MetricsError, match="no 'trajectory'"):
        compute_episode_metrics({"goals": goal, "geodesic_distance": 1.0})
    # No geodesic information: an error unless the Euclidean fallback is asked for.
    bare = EpisodeRecord(np.zeros((2, 3)), goal, 1.0, actions=["stop"], stops=(1,))
    with pytest.raises(MetricsError, match="geodesic"):
        compute_episode_metrics(bare)
    fallback = compute_episode_metrics(bare, MetricsConfig(allow_euclidean_fallback=True))
    assert fallback.geodesic is False and fallback.NE == pytest.approx(1.0) and fallback.SR == 1.0
    # A geodesic_fn that answers NaN is caught too.
    nan_fn = EpisodeRecord(
        np.zeros((2, 3)), goal, 1.0, geodesic_fn=lambda p: np.full(len(p), np.nan)
    )
    with pytest.raises(MetricsError, match="NaN"):
        compute_episode_metrics(nan_fn)


def test_unreachable_goal_gives_infinite_ne_and_failure():
    rec = EpisodeRecord(
        line(0, 1),
        [[5.0, 0, 0]],
        5.0,
        actions=["forward", "stop"],
        stops=(1,),
        goal_distances=[np.inf, np.inf],
    )
    m = compute_episode_metrics(rec)
    assert math.isinf(m.NE) and m.SR == 0.0 and m.OSR == 0.0


def test_config_validation_and_strict_loading():
    with pytest.raises(ConfigError, match="success_distance"):
        MetricsConfig(success_distance=0.0)
    with pytest.raises(ConfigError, match="resample_spacing"):
        MetricsConfig(resample_spacing=-1.0)
    cfg = config_from_mapping(
        MetricsConfig, {"success_distance": 2.0, "aori": {"view_radius": 1.5}}
    )
    assert cfg.success_distance == 2.0 and cfg.aori.view_radius == 1.5
    with pytest.raises(ConfigError, match="unknown key"):
        config_from_mapping(MetricsConfig, {"succes_distance": 2.0})
    with pytest.raises(ConfigError, match="overlap_threshold"):
        config_from_mapping(MetricsConfig, {"aori": {"overlap_threshold": 2.0}})
