"""DSCD-Nav: Eq. 13, and complete episodes replaying a scripted debate (early stop on
agreement, NCA override, Mode B geometry, stop verification, the trace metrics against
hand counts), the ablation switches, concurrent debaters, and the real ``openai`` client
on a loopback server through the eval harness."""

from __future__ import annotations

import json
import math
import re
import threading

import numpy as np
import pytest

from tests.agents.conftest import SMALL
from tests.agents.test_agents_episodes import run
from tests.agents.test_waypoints import box_room
from vlnverse.agents.base import StepView
from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.dscd_nav import Round, soft_compromise
from vlnverse.agents.gt_perception import ViewObjects
from vlnverse.agents.parsing import Decision
from vlnverse.agents.waypoints.candidate import Candidate
from vlnverse.agents.waypoints.depth import DepthWaypoints
from vlnverse.errors import ConfigError
from vlnverse.eval.agent import EpisodeInfo
from vlnverse.eval.registry import make_agent
from vlnverse.llm.base import LLMClient
from vlnverse.llm.transcript import RecordingClient, ReplayClient
from vlnverse.llm.types import LLMResponse, Usage
from vlnverse.sim.types import wrap_angle

CARD = re.compile(r"^([A-Z]): .*\[r = ([\d.]+) m, theta = ([+-]\d+) deg\]$", re.M)


def cards(prompt: str) -> dict[str, tuple[float, float]]:
    return {m[1]: (float(m[2]), float(m[3])) for m in CARD.finditer(prompt)}


def closest_pair(prompt: str) -> tuple[str, str]:
    """Two candidates at the smallest angular gap (a Mode B pair)."""
    found = cards(prompt)
    return min(((a, b) for a in found for b in found if a < b),
               key=lambda p: abs(wrap_angle(math.radians(found[p[0]][1] - found[p[1]][1]))))


def answer(role: str, step: int, prompt: str, verify: str = "yes") -> str:
    """The scripted debate: step 0 agree at once; step 1 three rounds of disagreement on a
    close pair, NCA sides with SIB; step 2 STOP, verified by the VLM check."""
    if role == "verify":
        return json.dumps({"visible": verify, "evidence": "scripted"})
    if step >= 2:
        return json.dumps({"decision": "agree", "why": "goal here", "evidence": "seen", "action": "STOP"})
    first = min(cards(prompt))
    a, b = closest_pair(prompt) if step == 1 else (first, first)
    pick = {"tsu": a, "sib": b, "nca": b}[role]
    return json.dumps({"decision": "agree" if pick == a else "counter", "why": f"{role} reasons",
                       "evidence": f"{role} evidence", "action": pick})


def role_of(system: str) -> str:
    for key, role in (("(TSU)", "tsu"), ("(SIB)", "sib"), ("(NCA)", "nca"), ("verify", "verify")):
        if key in system:
            return role
    raise AssertionError(system)


class DebateModel(LLMClient):
    """Answers each role by the scripted debate; counts calls per role."""

    def __init__(self, script=answer) -> None:
        super().__init__("debate-model")
        self.script = script
        self.roles: list[str] = []

    def send(self, request):
        system, prompt = request.messages[0].text, request.messages[-1].text
        role = role_of(system)
        self.roles.append(role)
        step = len(re.findall(r"^step \d+:", prompt, re.M))
        text = self.script(role, step, prompt)
        return LLMResponse(text=text, model=self.model, usage=Usage(len(prompt) // 4, 10), key=request.key)


def test_eq13_soft_compromise_and_wrapping():
    r, theta, delta = soft_compromise(2.0, math.radians(30), math.radians(60), 0.5, 1 / 3)
    assert (r, math.degrees(delta), math.degrees(theta)) == pytest.approx((1.0, 30.0, 40.0))
    _, theta, delta = soft_compromise(1.0, math.radians(170), math.radians(-170), 0.5, 1 / 3)
    assert math.degrees(delta) == pytest.approx(20.0) and math.degrees(theta) == pytest.approx(176.667, abs=1e-3)
    assert wrap_angle(math.pi) == pytest.approx(-math.pi)  # the simulator's convention, [-pi, pi)
    with pytest.raises(ConfigError, match="exclude"):
        make_agent("dscd_nav", {"tsu_only": True, "sib_only": True})
    with pytest.raises(ConfigError, match="schedule"):
        make_agent("dscd_nav", {"schedule": "random"})


def test_a_debated_episode_replays_with_the_protocol_and_its_metrics(dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    model = DebateModel()
    record, _ = run(dataset, "dscd_nav", RecordingClient(model, transcript))
    assert record["error"] is None and record["fail_reason"] == "stop"
    trace = record["agent_trace"]
    first, second, third = trace["debate"]
    # step 0: agreement in round 1 ends the debate early; Mode A executes id*.
    assert len(first["rounds"]) == 1 and first["consensus"] and first["mode"] == "A" and not first["override"]
    assert model.roles[:3] == ["tsu", "sib", "nca"]
    # step 1: K = 3 rounds of disagreement, NCA overrides TSU, Mode B micro-probes (Eq. 13).
    assert [(r["tsu"], r["sib"], r["sib_decision"]) for r in second["rounds"]] == \
        [(second["rounds"][0]["tsu"], second["judge"], "counter")] * 3
    assert second["override"] and second["mode"] == "B" and second["micro_probe"]
    step1 = trace["steps"][1]
    by_id = {c["id"]: c for c in step1["candidates"]}
    star, alt = by_id[second["judge"]], by_id[second["alt"]]
    delta = wrap_angle(math.radians(alt["heading_deg"] - star["heading_deg"]))
    assert abs(delta) <= math.radians(60)
    assert record["actions"][1][0] == pytest.approx(0.5 * star["distance_m"], abs=1e-3)
    assert record["actions"][1][1] == pytest.approx(wrap_angle(math.radians(star["heading_deg"]) + delta / 3), abs=1e-3)
    assert "step 1: micro-probed toward" in trace["steps"][2]["messages"][1]["content"]
    # step 2: STOP agreed and executed (stop_check "evidence": no veto call on a VLN task).
    assert "stop_verification" not in third and record["actions"][-1] == [0, 0, 1]
    assert model.roles[-3:] == ["tsu", "sib", "nca"]
    # the metrics against hand counts: 5 rounds, 3 disagreeing; 1 arbitration, overridden, probed.
    metrics = record["metrics"]
    assert metrics["DR"] == pytest.approx(3 / 5) and metrics["JOR"] == 1.0 and metrics["MPTR"] == 1.0
    assert (metrics["debate_rounds"], metrics["arbitrations"], metrics["micro_probes"]) == (5, 1, 1)
    assert metrics["AORI"] is not None and trace["calls"] == len(model.roles) == 3 + 7 + 3

    replayed, _ = run(dataset, "dscd_nav", ReplayClient(transcript))
    assert replayed["actions"] == record["actions"] and replayed["agent_trace"]["debate"] == trace["debate"]


@pytest.mark.parametrize("stop_check", ["evidence", "veto"])
def test_a_stop_on_a_vln_task_is_executed_without_a_veto(dataset, stop_check):
    """The veto is ObjectNav's only: on a VLN task it could refuse STOP until the budget ends."""
    model = DebateModel(lambda role, step, prompt: answer(role, 2, prompt, verify="no"))
    record, _ = run(dataset, "dscd_nav", model, config={"stop_check": stop_check}, max_steps=3)
    assert record["actions"] == [[0.0, 0.0, 1.0]] and "verify" not in model.roles
    assert "stop_verification" not in record["agent_trace"]["debate"][0]


@pytest.mark.parametrize("config, roles, mode", [
    ({"tsu_only": True}, ["tsu", "tsu"], "A"),
    ({"sib_only": True}, ["sib", "sib"], "A"),
    ({"nca": False}, ["tsu", "sib"] + ["tsu", "sib"] * 3, "B"),
    ({"micro_probing": False, "rounds": 2}, ["tsu", "sib", "nca"] + ["tsu", "sib"] * 2 + ["nca"], "A"),
])
def test_ablation_switches(dataset, config, roles, mode):
    model = DebateModel()
    record, _ = run(dataset, "dscd_nav", model, config=config, max_steps=2)
    assert model.roles == roles and record["agent_trace"]["debate"][1]["mode"] == mode
    assert record["agent_trace"]["debate_max_rounds"] == config.get("rounds", 3)


def test_simultaneous_rounds_send_both_stances_at_once(dataset):
    barrier = threading.Barrier(2, timeout=10)

    def script(role, step, prompt):
        if step == 1 and role in ("tsu", "sib") and "Round 1:" in prompt:
            barrier.wait()   # both round-2 calls must be in flight together
        return answer(role, step, prompt)

    record, _ = run(dataset, "dscd_nav", DebateModel(script), config={"schedule": "simultaneous"}, max_steps=2)
    assert record["error"] is None and len(record["agent_trace"]["debate"][1]["rounds"]) == 3


def test_dscd_nav_over_the_openai_client_on_a_loopback_server(dataset, tmp_path, monkeypatch):
    from vlnverse.eval.running.harness import EvalConfig, evaluate
    from vlnverse.llm.loopback import LoopbackServer

    def respond(body):
        system = body["messages"][0]["content"]
        content = body["messages"][-1]["content"]
        prompt = content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)
        return answer(role_of(system), len(re.findall(r"^step \d+:", prompt, re.M)), prompt)

    monkeypatch.setenv("VLNVERSE_TEST_DSCD_KEY", "sk-loopback")
    with LoopbackServer(respond) as server:
        spec = f"openai:gpt-4o?base_url={server.url}&api_key_env=VLNVERSE_TEST_DSCD_KEY&max_retries=0&timeout=10"
        result = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path), agent="dscd_nav",
                                     # DSCD-Nav's default candidates: geometry-aware, r in [0.4, 1.5] m
                                     agent_config={"perception": "gt", **SMALL},
                                     task="coarse", episodes=1,
                                     physics=("tel_hop",), plots=1, bootstrap=10, llm=spec))
    (record,) = result.records
    assert record["fail_reason"] == "stop" and record["metrics"]["JOR"] == 1.0
    assert server.calls == record["llm"]["calls"] == 13
    summary = (tmp_path / "summary.md").read_text()
    assert "MPTR" in summary and "DR" in summary
    run_file = json.loads((tmp_path / "run.json").read_text())["run"]
    settings = run_file["agent_settings"]
    assert (settings["stop_check"], settings["alpha_deg"], settings["perception"]) == ("evidence", 60.0, "gt")
    assert run_file["waypoint_predictor"]["name"] == "depth" and run_file["waypoint_predictor"]["range_m"] == [0.4, 1.5]
    distances = [c["distance_m"] for step in record["agent_trace"]["steps"] for c in step["candidates"]]
    assert distances and all(0.4 <= d <= 1.5 for d in distances)
    page = next((tmp_path / "viewer").glob("*.html")).read_text()
    assert "<b>Debate</b>" in page and "mode B" in page


def test_the_default_candidates_are_the_papers_and_the_learned_predictor_is_one_option_away():
    agent = make_agent("dscd_nav", {"perception": "gt", **SMALL, "waypoints": {"spacing_deg": 45}})
    assert isinstance(agent.predictor, DepthWaypoints)          # a partial mapping keeps the paper's range
    assert (agent.config.waypoints.min_distance, agent.config.waypoints.max_distance) == (0.4, 1.5)
    assert agent.waypoint_predictor_info["range_m"] == [0.4, 1.5] and agent.config.waypoints.spacing_deg == 45
    learned = make_agent("dscd_nav", {"perception": "gt", **SMALL, "waypoint_predictor": "learned"})
    assert learned.waypoint_predictor_info["name"] == "learned"
    assert make_agent("text_history", {"perception": "gt", **SMALL}).config.waypoints.max_distance == 3.0


# -- the paper's control flow on constructed steps ------------------------------------

SLOTS = DepthWaypoints(WaypointConfig())


def agent_for(task="coarse", llm=None, **config):
    agent = make_agent("dscd_nav", {"perception": "gt", **SMALL, **config}, llm=llm)
    agent.reset(EpisodeInfo(episode_id="e", task=task, split="val", physics="tel_hop", scene_id="s",
                            instruction="Find a bed.", action_space=None, action_space_name="waypoint",
                            max_steps=10, seed=0, extra={"object_category": "bed", "success_distance": 1.0}
                            if task == "objectnav" else {}))
    return agent


def view_of(candidates, objects=None, panorama=None):
    return StepView(step=0, pose=np.zeros(4), instruction="Find a bed.", panorama=panorama or box_room(9, 9, 9, 9),
                    candidates=tuple(candidates), options=(*(c.id for c in candidates), "STOP"),
                    objects=objects, room_type=None, reference_image=None, bump=False, dialogue=False)


def slot(index, distance=2.0):
    return Candidate(SLOTS.ids[index], float(SLOTS.headings[index]), distance, 0)


def disagreement(tsu, sib):
    return Round(3, Decision(tsu, fields={}), Decision(sib, fields={"decision": "counter"}))


def test_mode_b_fires_on_every_slot_pair_60_degrees_apart_and_not_beyond():
    agent = agent_for()
    n = len(SLOTS.ids)
    for i in range(n):
        for gap, mode in ((2, "B"), (3, "A")):   # 60 and 90 degrees on the 30-degree grid
            j = (i + gap) % n
            for star, alt in ((i, j), (j, i)):   # NCA sided with SIB; TSU's id is the alternative
                entry = {}
                agent._execution_mode(view_of([slot(star), slot(alt)]), Decision(SLOTS.ids[star]),
                                      disagreement(SLOTS.ids[alt], SLOTS.ids[star]), entry)
                assert entry["mode"] == mode, (SLOTS.ids[star], SLOTS.ids[alt], entry)


def test_consensus_is_sibs_declared_decision_and_both_are_traced():
    tsu = Decision("A", fields={})
    agree_other_id = Round(1, tsu, Decision("B", fields={"decision": "agree"}))
    counter_same_id = Round(1, tsu, Decision("A", fields={"decision": "Counter: too close to the wall"}))
    undeclared = Round(1, tsu, Decision("A", fields={}))
    assert agree_other_id.agree and not counter_same_id.agree and undeclared.agree
    assert agree_other_id.to_dict()["sib_decision"] == "agree" and not agree_other_id.to_dict()["same_id"]
    assert counter_same_id.to_dict()["sib_decision"] == "counter" and counter_same_id.to_dict()["same_id"]
    assert "SIB: counter, id A" in counter_same_id.describe()
    # Alg. 1 l. 10: an "agree" ends the debate even when SIB's id field differs.
    agent = agent_for()
    cards = [slot(0), slot(2)]
    model = DebateModel(lambda role, step, prompt: json.dumps(
        {"decision": "agree", "why": "w", "evidence": "e", "action": {"tsu": "A", "sib": "C", "nca": "A"}[role]}))
    agent._llm = model
    agent.record = {}
    agent.decide(view_of(cards))
    entry = agent.record["debate"]
    assert model.roles == ["tsu", "sib", "nca"] and entry["consensus"] and entry["mode"] == "A"


def test_mode_b_on_a_60_degree_disagreement_is_recorded_and_replayed(dataset, tmp_path):
    """Evidence: at step 1 the stances split over two candidates exactly 60 degrees apart (on the
    30-degree grid; the float gap is not exactly 60) and NCA sides with SIB: Mode B."""
    def at_60(prompt):
        found = cards(prompt)
        return next((a, b) for a in sorted(found) for b in sorted(found)
                    if a < b and round(abs(math.degrees(wrap_angle(math.radians(found[a][1] - found[b][1]))))) == 60)

    def script(role, step, prompt):
        if step != 1 or role == "verify":
            return answer(role, step, prompt)
        a, b = at_60(prompt)
        pick = {"tsu": a, "sib": b, "nca": b}[role]
        return json.dumps({"decision": "counter", "why": f"{role} reasons", "evidence": "e", "action": pick})

    transcript = tmp_path / "calls.jsonl"
    record, _ = run(dataset, "dscd_nav", RecordingClient(DebateModel(script), transcript))  # on the 30-degree grid
    step1 = record["agent_trace"]["debate"][1]
    assert abs(step1["delta_theta_deg"]) == 60.0 and step1["mode"] == "B" and step1["micro_probe"]
    assert len(step1["rounds"]) == 3 and record["agent_trace"]["steps"][1]["action"][:2] == \
        [step1["probe"]["r"], round(math.radians(step1["probe"]["theta_deg"]), 4)]
    replayed, _ = run(dataset, "dscd_nav", ReplayClient(transcript))
    assert replayed["actions"] == record["actions"] and replayed["agent_trace"]["debate"] == record["agent_trace"]["debate"]


def test_an_objectnav_veto_uses_the_success_radius_and_reads_json_booleans():
    objects = (ViewObjects(0, 0.0, (("bed", 2.5),)),)
    near = (ViewObjects(0, 0.0, (("bed", 1.5),)),)
    agent = agent_for("objectnav", stop_check="veto")
    assert agent._target_in_view(view_of([slot(0)], objects)) == (False, "semantic")   # 2.5 > 1.0 + 1.0
    assert agent._target_in_view(view_of([slot(0)], near)) == (True, "semantic")
    for reply, seen in (('{"visible": true, "evidence": "a bed"}', True), ('{"visible": "no"}', False),
                        ("Visible: Yes", True)):
        vlm = agent_for("objectnav", llm=DebateModel(lambda *_, text=reply: text), stop_check="veto")
        vlm.record = {}
        assert vlm._target_in_view(view_of([slot(0)])) == (seen, "vlm")
    with pytest.raises(ConfigError, match="stop_check"):
        make_agent("dscd_nav", {"stop_check": "always"})


def test_evidence_mode_puts_the_goal_detections_in_the_goal_aware_prompts_only():
    agent = agent_for("objectnav")
    goal, free = agent._context(view_of([slot(0)], (ViewObjects(0, 0.0, (("bed", 2.5),)),)))
    goal_text = "\n".join(p for _, p in goal.parts if isinstance(p, str))
    free_text = "\n".join(p for _, p in free.parts if isinstance(p, str))
    assert "Detector evidence for the goal" in goal_text and "bed at 2.5 m in view 0" in goal_text
    assert "Detector evidence" not in free_text and "Find a bed" not in free_text


def test_a_micro_probe_is_clipped_to_the_free_space_along_its_heading():
    agent = agent_for()
    walled = box_room(1.0, 9.0, 9.0, 9.0)            # a wall 1 m ahead
    star, alt = slot(0, 3.0), slot(2, 3.0)           # 0 and 60 degrees: the probe heads 20 degrees left
    entry = {}
    agent._execution_mode(view_of([star, alt], panorama=walled), Decision("A"), disagreement("C", "A"), entry)
    probe = entry["probe"]
    free = DepthWaypoints(agent.config.waypoints).reach(walled, math.radians(20))
    assert entry["mode"] == "B" and probe["clipped"] and probe["r_compromise"] == 1.5
    assert probe["r"] == pytest.approx(free, abs=1e-4) and probe["r"] < 1.0
    agent.record = {"debate": entry}
    assert agent._action(Decision("A"), view_of([star, alt], panorama=walled))[0] == pytest.approx(probe["r"], abs=1e-4)
    entry = {}
    agent._execution_mode(view_of([star, alt]), Decision("A"), disagreement("C", "A"), entry)
    assert not entry["probe"]["clipped"] and entry["probe"]["r"] == 1.5          # open space: Eq. 13 as is
    entry = {}
    agent_for(clip_probe=False)._execution_mode(view_of([star, alt], panorama=walled), Decision("A"),
                                                disagreement("C", "A"), entry)
    assert entry["probe"]["r"] == 1.5 and not entry["probe"]["clipped"]       # the departure switched off


def test_a_failed_judge_keeps_the_consensus_else_tsus_preference(dataset):
    def script(role, step, prompt):
        return "I cannot decide." if role == "nca" else answer(role, step, prompt)

    record, _ = run(dataset, "dscd_nav", DebateModel(script), max_steps=2)
    trace = record["agent_trace"]
    first, second = trace["debate"]
    assert first["judge"] is None and first["judge_fallback"] == "consensus"
    agreed = next(c for c in trace["steps"][0]["candidates"] if c["id"] == first["rounds"][0]["tsu"])
    assert record["actions"][0][:2] == pytest.approx([agreed["distance_m"], math.radians(agreed["heading_deg"])], abs=1e-2)
    assert second["judge_fallback"] == "tsu" and second["alt"] == second["rounds"][-1]["sib"]


def test_sib_does_not_see_the_goal_picture(dataset):
    record, _ = run(dataset, "dscd_nav", DebateModel(), task="visual_reference", max_steps=1)
    calls = record["agent_trace"]["steps"][0]["consultations"]
    tsu = next(c for c in calls if c["purpose"] == "tsu")["messages"][-1]["content"]
    sib = next(c for c in calls if c["purpose"] == "sib")["messages"][-1]["content"]
    assert "Goal picture" in tsu and "Goal picture" not in sib
    assert "<image" in tsu and "<image" not in sib


def test_no_prompt_offers_questions_where_ask_is_not_an_option(dataset):
    model = DebateModel()
    record, _ = run(dataset, "dscd_nav", model, task="dialogue", max_steps=2)
    step = record["agent_trace"]["steps"][0]
    assert "ASK" in step["options"]                    # the episode allows questions; the debate does not
    texts = [m["content"] for s in record["agent_trace"]["steps"] for c in s["consultations"] for m in c["messages"]]
    texts += [m["content"] for s in record["agent_trace"]["steps"] for m in s.get("messages", [])]
    assert len(texts) > 6 and not any("may ask" in t or "ASK" in t for t in texts)
