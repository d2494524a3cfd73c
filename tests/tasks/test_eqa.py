"""EQA: question generation on the bundled scenes (one correct option, in-scene distractors,
balanced answer positions and kinds), the env's answer actions, and evaluation outcomes
(oracle 100 % correct, random about chance, inconclusive reasons, a bad answer index)."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from tests.bundled import bundled_dataset
from vlnverse.cli import main
from vlnverse.errors import DatasetError, InvalidActionError
from vlnverse.eval.agent import Answer, Inconclusive
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.episode import QUESTION_KINDS, Episode, Question
from vlnverse.tasks.report import dataset_stats

PER_SCENE = 8


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return bundled_dataset(tmp_path_factory.mktemp("eqa"), tasks=("eqa",), per_scene=PER_SCENE)


@pytest.fixture(scope="module")
def episodes(dataset):
    return EpisodeDataset.open(dataset).episodes(None, "eqa")


def _context(dataset, episode):
    from vlnverse.scene.inspect import prepare_scene
    from vlnverse.tasks.context import SceneContext
    from vlnverse.tasks.generate import GenerationConfig

    gen = GenerationConfig()
    prepared = prepare_scene(str(EpisodeDataset.open(dataset).scene_file(episode)), gen.agent_radius,
                             gen.agent_height, gen.resolution)
    return SceneContext(prepared, viewpoint_distance=gen.sampling.viewpoint_distance)


def test_each_question_has_one_correct_option_and_in_scene_distractors(dataset, episodes):
    from vlnverse.scene.scene_graph import box_gap
    from vlnverse.tasks.context import room_name
    from vlnverse.tasks.eqa import FAR_GAP, color_family, label, same_head

    assert len(episodes) == 3 * PER_SCENE
    for scene_id in sorted({e.scene_id for e in episodes}):
        mine = [e for e in episodes if e.scene_id == scene_id]
        context = _context(dataset, mine[0])
        in_scene = {label(o.category) for o in context.objects.values()}
        for e in mine:
            q = e.question
            assert e.instruction.text == q.prompt() and q.options[q.answer] == q.answer_text
            assert len(set(q.options)) == 4 and q.options.count(q.answer_text) == 1
            distractors = [o for k, o in enumerate(q.options) if k != q.answer]
            if q.kind == "room":   # the scene's own room types only (no kitchen beside a kitchenette)
                assert set(q.options) <= {room_name(t) for t in context.room_types.values()}
            objects = [context.objects[o] for o in q.object_ids]
            if q.kind in ("existence", "near"):   # categories of this scene, none of them the right one
                assert set(distractors) <= in_scene
                assert not any(same_head(d, q.answer_text) for d in distractors)   # no "sink" for "bathroom sink"
            if q.kind == "near":   # the answer is within 1 m of the anchor, every distractor at least 2 m away
                anchor = objects[0]
                assert all(label(o.category) == q.answer_text for o in objects[1:])
                for o in context.objects.values():
                    if label(o.category) in distractors:
                        assert box_gap(anchor.aabb_min, anchor.aabb_max, o.aabb_min, o.aabb_max) >= FAR_GAP
            if q.kind == "existence":
                rooms = set(q.room_ids)
                assert objects and all(o.room_id in rooms and label(o.category) == q.answer_text for o in objects)
                assert not any(o.room_id in rooms and label(o.category) in distractors for o in context.objects.values())
            if q.kind == "color":
                assert objects[0].color == q.answer_text
                assert all(color_family(d) != color_family(q.answer_text) for d in distractors)
            if q.kind == "room":
                assert context.room_label(objects[0].room_id) == q.answer_text
            if q.kind == "count":
                categories = {o.category for o in objects}
                assert int(q.answer_text) == len(objects) and len(categories) <= 1
                assert all(o.room_id == q.room_ids[0] for o in objects)
                assert sum(1 for o in context.objects.values()
                           if o.room_id == q.room_ids[0] and o.category in categories) == len(objects)
            assert e.goals and e.reference_path and e.geodesic_distance >= 3.0 - 0.5


def test_answer_positions_and_kinds_are_balanced_and_reported(episodes):
    for scene_id in {e.scene_id for e in episodes}:
        positions = Counter(e.question.answer for e in episodes if e.scene_id == scene_id)
        assert set(positions.values()) == {PER_SCENE // 4}   # each block of four is a permutation
    stats = dataset_stats(episodes)["eqa"]
    assert stats["answer_positions"] == {"A": 6, "B": 6, "C": 6, "D": 6}
    assert stats["max_position_share"] == 0.25
    assert sum(stats["question_kinds"].values()) == len(episodes)
    assert len(stats["question_kinds"]) == 5 and set(stats["question_kinds"]) == set(QUESTION_KINDS) - {"state"}


def test_the_schema_round_trips_and_rejects_bad_questions(episodes, tmp_path):
    from vlnverse.tasks.formats.release import export_release, import_release

    episode = episodes[0]
    assert Episode.from_dict(json.loads(json.dumps(episode.to_dict()))) == episode
    export_release(episodes, tmp_path)
    imported = {e.episode_id: e.question for e in import_release(tmp_path)}
    assert imported == {e.episode_id: e.question for e in episodes}
    export_release(episodes, tmp_path / "withheld", withhold_test_paths=True)
    withheld = json.loads(gzip.decompress((tmp_path / "withheld/final_splits/eqa_test.json.gz").read_bytes()))
    assert withheld["episodes"]
    for record in withheld["episodes"]:   # the answer is the test split's ground truth
        assert set(record["question"]) == {"text", "options", "kind"}
        assert "landmarks" not in record["instruction"] and "category" not in json.dumps(record["goals"])
    with pytest.raises(DatasetError, match="answer"):
        import_release(tmp_path / "withheld")
    bad = episode.to_dict()
    bad["question"]["answer"] = 4
    with pytest.raises(DatasetError, match="option index"):
        Episode.from_dict(bad)
    with pytest.raises(DatasetError, match="distinct"):
        Question("Which?", ("a", "b", "a", "c"), 0, "existence")
    with pytest.raises(DatasetError, match="only for, eqa"):
        Episode.from_dict({**episode.to_dict(), "task": "coarse"})


def test_the_env_answers_with_discrete_ids_or_answer_and_rejects_bad_indices(dataset, episodes):
    from gymnasium.utils.env_checker import check_env

    from vlnverse.envs.nav_env import NavEnv

    env = NavEnv(dataset=dataset, task="eqa", sensors=(), physics="tel_hop")
    try:
        check_env(env, skip_render_check=True)
        obs, info = env.reset(options={"episode_id": episodes[0].episode_id})
        question = episodes[0].question
        assert obs["question"] == question.text and obs["options"] == question.options
        assert info["eqa_answer"] == question.answer and info["answer"] is None
        assert [env.answer_action(k) for k in range(4)] == [4, 5, 6, 7] and env.action_space.n == 8
        with pytest.raises(InvalidActionError, match="option index 0..3, got 7"):
            env.answer(7)
        wrong = (question.answer + 1) % 4
        _, reward, terminated, _, info = env.step(env.answer_action(wrong))
        assert terminated and info["answer"] == wrong and info["answer_correct"] is False
        assert info["fail_reason"] == "wrong_answer"
        env.reset(options={"episode_id": episodes[0].episode_id})
        _, reward, terminated, _, info = env.answer(question.answer)
        assert terminated and info["answer_correct"] is True and reward > 5
    finally:
        env.close()
    with NavEnv(dataset=dataset, task="eqa", sensors=(), dialogue=True) as both:   # answers after the ask id
        assert both.ask_action == 4 and [both.answer_action(k) for k in range(4)] == [5, 6, 7, 8]


def _evaluate(dataset, out, agent, **kwargs):
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    return evaluate(EvalConfig(dataset=str(dataset), out=str(out), agent=agent, task="eqa", physics=("tel_hop",),
                               plots=0, bootstrap=10, **kwargs))


@pytest.mark.slow
def test_the_oracle_answers_everything_and_random_is_about_chance(dataset, tmp_path):
    oracle = _evaluate(dataset, tmp_path / "oracle", "oracle")
    assert {r["outcome"] for r in oracle.records} == {"correct"}
    assert all(r["answer_correct"] and r["metrics"]["correct"] == 1.0 for r in oracle.records)
    waypoint = _evaluate(dataset, tmp_path / "waypoint", "oracle", episodes=3, agent_config={"action_space": "waypoint"})
    assert [r["outcome"] for r in waypoint.records] == ["correct"] * 3   # Answer(k) on a continuous space
    table = (tmp_path / "oracle" / "summary.md").read_text()
    assert "Embodied question answering" in table and "| 100.00 | 0.00 | 0.00 |" in table
    answers = []
    for seed in range(4):
        run = _evaluate(dataset, tmp_path / f"random{seed}", "random", seed=seed)
        answers += [r["answer_correct"] for r in run.records if r["outcome"] != "inconclusive"]
    assert len(answers) >= 60
    assert 0.12 <= sum(answers) / len(answers) <= 0.40   # chance is 25 %


def test_inconclusive_reasons_and_a_bad_answer_index(dataset, tmp_path):
    gave_up = _evaluate(dataset, tmp_path / "c", "tests.tasks.test_eqa:cost_limit", episodes=2)
    assert {(r["outcome"], r["outcome_reason"]) for r in gave_up.records} == {("inconclusive", "cost_limit")}
    bad = _evaluate(dataset, tmp_path / "b", "tests.tasks.test_eqa:bad_index", episodes=2)
    for record in bad.records:
        assert (record["outcome"], record["outcome_reason"]) == ("inconclusive", "error")
        assert record["error_source"] == "invalid_action" and "option index 0..3, got 9" in record["error"]
    forward = _evaluate(dataset, tmp_path / "f", "forward", episodes=1, max_steps=20)
    assert forward.records[0]["outcome_reason"] == "step_limit"
    assert "inconclusive (step_limit)" in (tmp_path / "f" / "index.html").read_text()   # the episode list says so


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_an_agent_that_never_returns_is_inconclusive_by_time_limit(dataset, tmp_path):
    hung = _evaluate(dataset, tmp_path / "t", "tests.eval.agents_for_tests:SleepingAgent", episodes=1,
                     episode_timeout=1)   # asleep in native code: its worker process is killed
    record = hung.records[0]
    assert (record["outcome"], record["outcome_reason"]) == ("inconclusive", "time_limit")
    assert record["fail_reason"] == "timeout" and "worker process was killed" in record["error"]


def cost_limit(observation):
    return Inconclusive("cost_limit")


def bad_index(observation):
    return Answer(9)


def test_datagen_cli_generates_eqa_and_resumes(capsys, tmp_path):
    from tests.bundled import BUNDLED_SCENES

    args = ["datagen", "--scenes", str(BUNDLED_SCENES), "--out", str(tmp_path / "ds"), "--tasks", "eqa",
            "--per-scene", "4", "--no-progress", "--json", "--no-report"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["episodes"] == 12 and first["scenes_generated"] == 3
    episodes = (tmp_path / "ds").rglob("*.jsonl*")
    before = {p: p.read_bytes() for p in episodes}
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["scenes_resumed"] == 3 and again["episodes"] == 12
    assert {p: p.read_bytes() for p in before} == before
    stats = dataset_stats(EpisodeDataset.open(tmp_path / "ds").episodes(None, "eqa"))
    assert stats["eqa"]["answer_positions"] == {"A": 3, "B": 3, "C": 3, "D": 3}


def test_counts_never_include_an_instance_without_a_reachable_viewpoint(dataset, episodes, monkeypatch):
    import vlnverse.tasks.eqa as eqa
    from vlnverse.tasks.generate import GenerationConfig

    counted = next(e for e in episodes if e.question.kind == "count" and len(e.question.object_ids) > 1)
    hidden = counted.question.object_ids[0]
    real = eqa.instance_goal
    monkeypatch.setattr(eqa, "instance_goal", lambda c, oid, r: None if oid == hidden else real(c, oid, r))
    context = _context(dataset, counted)
    questions = eqa.eqa_episodes(context, GenerationConfig().eqa, 40, 0, lambda n: ["train"] * n, _Questions())
    counts = [q for q in questions if q.kind == "count"]
    assert counts and not any(hidden in q.object_ids for q in counts)


class _Questions:
    """A stand-in episode writer that keeps only each episode's question."""

    def _episode(self, *args, question):
        return question

    def _provenance(self, _):
        return None


def test_state_questions_are_opt_in_and_match_the_scene(dataset, episodes):
    from vlnverse.tasks.eqa import EQAConfig, eqa_episodes

    assert "state" not in EQAConfig().kinds   # not rendered: no agent could see the answer
    asked = []
    for scene_id in sorted({e.scene_id for e in episodes}):
        context = _context(dataset, next(e for e in episodes if e.scene_id == scene_id))
        for q in eqa_episodes(context, EQAConfig(kinds=("state",)), 4, 0, lambda n: ["train"] * n, _Questions()):
            states = {o: context.scene.object_by_id(o).state for o in context.objects}
            word = q.text.removeprefix("Which of these is ").removesuffix("?")
            right = states[q.object_ids[0]]
            assert q.kind == "state" and word == {"on": "switched on", "off": "switched off"}.get(right, right)
            asked.append(q)
    assert asked
