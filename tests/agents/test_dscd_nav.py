"""DSCD-Nav: Eq. 13, and complete episodes replaying a scripted debate (early stop on
agreement, NCA override, Mode B geometry, stop verification, the trace metrics against
hand counts), the ablation switches, concurrent debaters, and the real ``openai`` client
on a loopback server through the eval harness."""

from __future__ import annotations

import json
import math
import re
import threading

import pytest

from tests.agents.conftest import SMALL
from tests.agents.test_agents_episodes import run
from vlnverse.agents.dscd_nav import soft_compromise, wrap_angle
from vlnverse.errors import ConfigError
from vlnverse.eval.registry import make_agent
from vlnverse.llm.base import LLMClient
from vlnverse.llm.transcript import RecordingClient, ReplayClient
from vlnverse.llm.types import LLMResponse, Usage

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
    assert wrap_angle(-math.pi) == pytest.approx(math.pi)
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
    # step 2: STOP agreed and confirmed by the VLM check (no category in a VLN episode).
    assert third["stop_verification"] == {"confirmed": True, "by": "vlm"} and record["actions"][-1] == [0, 0, 1]
    assert model.roles[-4:] == ["tsu", "sib", "nca", "verify"]
    # the metrics against hand counts: 5 rounds, 3 disagreeing; 1 arbitration, overridden, probed.
    metrics = record["metrics"]
    assert metrics["DR"] == pytest.approx(3 / 5) and metrics["JOR"] == 1.0 and metrics["MPTR"] == 1.0
    assert (metrics["debate_rounds"], metrics["arbitrations"], metrics["micro_probes"]) == (5, 1, 1)
    assert metrics["AORI"] is not None and trace["calls"] == len(model.roles) == 3 + 7 + 4

    replayed, _ = run(dataset, "dscd_nav", ReplayClient(transcript))
    assert replayed["actions"] == record["actions"] and replayed["agent_trace"]["debate"] == trace["debate"]


def test_an_unconfirmed_stop_is_not_executed(dataset):
    model = DebateModel(lambda role, step, prompt: answer(role, 2 if step == 0 else step, prompt,
                                                         verify="no" if step == 0 else "yes"))
    record, _ = run(dataset, "dscd_nav", model, max_steps=3)
    first = record["agent_trace"]["debate"][0]
    assert first["stop_verification"] == {"confirmed": False, "by": "vlm"}
    assert record["actions"][0][2] == 0.0 and record["actions"][0][0] > 0   # moved instead


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
    from vlnverse.eval.harness import EvalConfig, evaluate
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
                                     agent_config={"perception": "gt", **SMALL}, task="coarse", episodes=1,
                                     physics=("tel_hop",), plots=1, bootstrap=10, llm=spec))
    (record,) = result.records
    assert record["fail_reason"] == "stop" and record["metrics"]["JOR"] == 1.0
    assert server.calls == record["llm"]["calls"] == 14
    summary = (tmp_path / "summary.md").read_text()
    assert "MPTR" in summary and "DR" in summary
    page = next((tmp_path / "viewer").glob("*.html")).read_text()
    assert "<b>Debate</b>" in page and "mode B" in page
