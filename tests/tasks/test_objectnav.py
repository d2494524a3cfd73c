"""ObjectNav: generation on the bundled scenes (goals = every instance's viewpoint, starts
beyond the success distance, the category vocabulary in the stats) and its evaluation
(success needs the instance in view; SPL to the closest instance)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bundled import bundled_dataset
from vlnverse.eval.scoring.episode_record import EpisodeRecord
from vlnverse.eval.scoring.metrics import compute_episode_metrics
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.report import dataset_stats


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return bundled_dataset(tmp_path_factory.mktemp("objectnav"), tasks=("objectnav",), per_scene=2)


def test_generation_goals_starts_and_vocabulary(dataset):
    from vlnverse.scene.inspect import prepare_scene
    from vlnverse.tasks.context import SceneContext
    from vlnverse.tasks.generate import GenerationConfig
    from vlnverse.tasks.objectnav import category_goals

    ds = EpisodeDataset.open(dataset)
    episodes = ds.episodes(None, "objectnav")
    assert len(episodes) == 6 and {e.task for e in ds.episodes(None, None)} == {"objectnav"}
    episode = episodes[0]
    gen = GenerationConfig()
    context = SceneContext(prepare_scene(str(ds.scene_file(episode)), gen.agent_radius, gen.agent_height,
                                         gen.resolution), viewpoint_distance=gen.sampling.viewpoint_distance)
    goals = category_goals(context, gen.objectnav)
    for e in (e for e in episodes if e.scene_id == episode.scene_id):
        category = e.goals[0].category
        assert e.instruction.text.startswith("Find a") and category.replace("_", " ") in e.instruction.text
        assert e.goals == tuple(goals[category])   # every instance with a viewpoint
        distances = [context.navigator.geodesic_distance(e.start_position, g.position) for g in e.goals]
        assert min(distances) >= 3.0 > e.goals[0].radius == 1.0   # beyond the success distance
        assert e.geodesic_distance == pytest.approx(min(distances), abs=0.05)   # SPL's L: the closest
    stats = dataset_stats(episodes)
    assert sum(stats["objectnav_categories"].values()) == 6
    assert set(stats["objectnav_categories"]) == {e.goals[0].category for e in episodes}


def test_the_oracle_succeeds_and_a_stop_at_the_start_fails(dataset, tmp_path):
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    result = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path / "o"), agent="oracle", task="objectnav",
                                 physics=("tel_hop",), plots=0, bootstrap=10))
    for record in result.records:
        assert record["metrics"]["SR"] == 1.0 and record["stop_visible"] == [True]
        assert record["goals"][0]["radius"] == 1.0 and record["metrics"]["NE"] < 1.0
    stopped = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path / "s"), agent="tests.tasks.test_objectnav:stop",
                                  task="objectnav", physics=("tel_hop",), plots=0, bootstrap=10))
    assert all(r["metrics"]["SR"] == 0.0 for r in stopped.records)


def stop(observation):
    return 0


def test_success_needs_the_instance_in_view(dataset):
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.tasks.objectnav import instance_visible

    ds = EpisodeDataset.open(dataset)
    episode = ds.episodes(None, "objectnav")[0]
    goal = episode.goals[0]
    env = NavEnv(str(ds.scene_file(episode)), physics="tel_hop", sensors=())
    try:
        env.reset(seed=0)
        eye = env.occupancy.floor_height + env.agent_spec.camera_height
        assert instance_visible(env.sim, goal.object_id, goal.position, eye)
        assert not instance_visible(env.sim, goal.object_id, goal.position, env.occupancy.floor_height - 2.0)
    finally:
        env.close()
    at_goal = dict(positions=np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]), goals=np.array([[0.5, 0.0, 0.0]]),
                   geodesic_distance=0.5, actions=(1, 0), stops=(1,),
                   goal_distances=np.array([[0.5, 0.0]]))
    assert compute_episode_metrics(EpisodeRecord(**at_goal, stop_visible=(True,))).SR == 1.0
    assert compute_episode_metrics(EpisodeRecord(**at_goal, stop_visible=(False,))).SR == 0.0


def test_dscd_nav_reads_goal_detections_as_evidence_and_vetoes_a_stop_only_when_asked(dataset):
    """``stop_check: evidence`` (default): the semantic sensor's detections of the goal category
    are in the prompt and STOP is executed; ``veto``: a STOP needs the target confirmed."""
    from tests.agents.test_agents_episodes import run
    from tests.agents.test_dscd_nav import DebateModel, answer

    model = DebateModel(lambda role, step, prompt: answer(role, 2, prompt))   # everyone says STOP
    record, episode = run(dataset, "dscd_nav", model, task="objectnav", max_steps=2)
    prompt = record["agent_trace"]["steps"][0]["messages"][1]["content"]
    assert f"Find a {episode.goals[0].category}" in prompt and "Detector evidence for the goal" in prompt
    assert "stop_verification" not in record["agent_trace"]["debate"][0]
    assert record["actions"][0] == [0, 0, 1]

    model = DebateModel(lambda role, step, prompt: answer(role, 2, prompt))
    record, _ = run(dataset, "dscd_nav", model, task="objectnav", max_steps=2, config={"stop_check": "veto"})
    check = record["agent_trace"]["debate"][0]["stop_verification"]
    assert check["by"] == "semantic" and "verify" not in model.roles
    assert (record["actions"][0] == [0, 0, 1]) == check["confirmed"]


def test_the_env_judges_objectnav_success_with_the_instance_in_view(dataset, monkeypatch):
    """Playing the dataset through the env (no eval harness) gates success on visibility too."""
    import dataclasses

    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.tasks import objectnav

    ds = EpisodeDataset.open(dataset)
    episode = ds.episodes(None, "objectnav")[0]
    at_goal = dataclasses.replace(episode, start_position=episode.goals[0].position)
    env = NavEnv(str(ds.scene_file(episode)), physics="tel_hop", sensors=())
    try:
        outcomes = []
        for visible in (None, False):
            if visible is not None:
                monkeypatch.setattr(objectnav, "instance_visible", lambda *args, seen=visible: seen)
            env.reset(seed=0, options={"episode": at_goal})
            *_, info = env.step(0)
            outcomes.append(info["success"])
    finally:
        env.close()
    assert outcomes == [True, False]
