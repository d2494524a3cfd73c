"""ARNA: the plan grammar and interpreter, whole episodes with a scripted model (recorded and
replayed), the §6.3 budgets and their inconclusive outcomes, and a map built from the
agent's own sensors only (the privileged scene graph is poisoned)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from tests.agents.arna_script import LOOP_PLAN, ARNAScript
from tests.agents.conftest import SMALL
from vlnverse.agents.arna import plan as grammar
from vlnverse.agents.arna.plan import Interpreter, PlanRejected, StepLimit, validate
from vlnverse.agents.arna.tools import INTERFACES, argument_problems
from vlnverse.envs.nav_env import NavEnv
from vlnverse.eval.registry import make_agent
from vlnverse.eval.running.runner import run_episode
from vlnverse.llm.transcript import RecordingClient, ReplayClient
from vlnverse.tasks.dataset import EpisodeDataset

CHECKERS = {name: argument_problems(name) for name in INTERFACES}
EXPLORE = {"step": "explore", "goal": "look around"}


def run(dataset, llm, config=None, *, physics="tel_hop", max_steps=30, env_hook=None, task="coarse"):
    ds = EpisodeDataset.open(dataset)
    episode = ds.episodes(None, task)[0]
    agent = make_agent("arna", {"perception": "gt", **SMALL, **(config or {})}, llm=llm)
    env = NavEnv(str(ds.scene_file(episode)), physics=physics, action_space=agent.action_space,
                 sensors=agent.sensors, max_episode_steps=max_steps, task=task)
    try:
        if env_hook is not None:
            env_hook(env)
        record, _ = run_episode(env, agent, episode, physics=physics)
    finally:
        env.close()
    return record


def answer_at_the_answer_step(request):
    upcoming = request.messages[-1].text.split("Next plan step:\n", 1)[-1].split("\n", 1)[0]
    done = "ANSWER(" in upcoming
    return {"rationale": "answer step" if done else "continue", "terminal": done, "answer": "B" if done else None}


# -- the grammar -------------------------------------------------------------------------

@pytest.mark.parametrize(("plan", "problem"), [
    ({"main": [{"exec": "import os; os.system('rm -rf /')"}]}, "unknown statement"),
    ({"main": [{"tool": "__import__", "args": {"name": "os"}}]}, "unknown tool"),
    ({"main": [{"step": "explore", "goal": "x", "code": "eval('1')"}]}, "unknown keys"),
    ({"main": [{"break": True}]}, "inside a while"),
    ({"functions": {"f": [{"run": "f"}]}, "main": [{"run": "f"}]}, "calls itself"),
    ({"main": [{"tool": "ExploreInterface", "args": {"strategy": "fly"}}]}, "ExploreInterface strategy"),
    ({"main": [{"while": {"always": True}, "body": [EXPLORE], "max_iterations": 10**6}]}, "max_iterations"),
    ({"main": [{"if": {"eval": "__import__('os')"}, "then": [EXPLORE]}]}, "unknown condition"),
    ({"main": "while True: explore()"}, "non-empty list"),
    ({"main": [EXPLORE], "setup": "import os"}, "unknown top-level"),
    ({"main": [{"step": "teleport", "goal": "the goal"}]}, "step kind"),
    ({"main": [{"if": {"always": True}, "then": [{"if": {"always": True}, "then": [{"if": {"always": True}, "then": [
        {"if": {"always": True}, "then": [{"if": {"always": True}, "then": [{"if": {"always": True}, "then": [
            EXPLORE]}]}]}]}]}]}]}, "nested deeper"),
    ({"main": [EXPLORE] * (grammar.MAX_STATEMENTS + 1)}, "at most"),
    ({"functions": {"f": [EXPLORE]}, "main": [{"run": ["f"]}]}, "unknown function"),   # unhashable names
    ({"main": [{"tool": {"name": "GoToInterface"}}]}, "unknown tool"),
    ({"main": [{"tool": "ExploreInterface", "args": {"strategy": "rotate_in_place", "angle_deg": float("nan")}}]},
     "finite number"),
    ({"main": [{"tool": "OverlayInterface", "args": {"fusion_action": "overlay_on_occupancy_grid",
                                                    "points_x": [0.0] * 1000, "points_y": [0.0] * 1000}}]},
     "at most 32 items"),
    ({"main": [{"while": {"any": [{"found": "x"}] * grammar.MAX_STATEMENTS}, "body": [EXPLORE]}]}, "at most"),
])
def test_plans_outside_the_grammar_are_rejected_with_the_reason(plan, problem):
    with pytest.raises(PlanRejected) as caught:
        validate(plan, CHECKERS)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_the_arna_package_never_executes_generated_text():
    package = Path(grammar.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"exec", "eval", "compile", "__import__"}, f"{path.name}:{node.lineno}"


def test_a_plan_with_a_loop_and_a_function_executes_within_its_limits():
    plan = {"functions": {"look": [{"tool": "MemoryReadInterface", "args": {"next_step": "n", "rationale": "r"},
                                    "as": "seen"}, {"return": "seen"}]},
            "main": [{"while": {"not": {"found": "hit"}}, "max_iterations": 10,
                      "body": [EXPLORE, {"run": "look", "as": "hit"},
                               {"if": {"found": "hit"}, "then": [{"break": True}]}]},
                     {"answer": "done"}]}
    program = validate(plan, CHECKERS)
    calls, received = [], []

    def execute(stmt):
        calls.append(stmt.get("step") or stmt.get("tool") or "answer")
        received.append((yield f"move {len(calls)}"))
        return type("Result", (), {"found": calls.count("MemoryReadInterface") == 3})()

    interpreter = Interpreter(program, execute, max_statements=100)
    run_, sent, yielded = interpreter.run(), None, []
    with pytest.raises(StopIteration):
        while True:
            yielded.append(run_.send(sent) if yielded else next(run_))
            sent = f"ok {len(yielded)}"
    assert calls == ["explore", "MemoryReadInterface"] * 3 + ["answer"]
    assert received == [f"ok {i}" for i in range(1, 8)] and len(yielded) == 7
    assert interpreter.variables["hit"].found

    endless = validate({"main": [{"while": {"always": True}, "max_iterations": 50, "body": [EXPLORE]}]}, CHECKERS)

    def idle(stmt):
        return None
        yield

    with pytest.raises(StepLimit):
        for _ in Interpreter(endless, idle, max_statements=20).run():
            pass


# -- whole episodes ------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("physics", ["tel_hop", "strict"])
def test_the_loop_plan_runs_an_episode_and_replays_from_its_transcript(dataset, tmp_path, physics):
    transcript = tmp_path / "calls.jsonl"
    model = ARNAScript({"NextStep": answer_at_the_answer_step})
    record = run(dataset, RecordingClient(model, transcript), physics=physics)
    assert record["error"] is None and record["fail_reason"] == "stop"
    arna = record["agent_trace"]["arna"]
    assert arna["answer"] == "B" and arna["outcome_reason"] is None
    assert arna["workflow"]["plan_source"] == "model" and arna["plan_rejections"] == 0
    calls = [c["tool"] for s in record["agent_trace"]["steps"] for c in s.get("tool_calls", [])]
    assert calls == ["ExploreInterface", "ObjectInterface"] * 3          # max_iterations 3, never found
    assert arna["statements_executed"] == 1 + 3 * 2 + 1
    assert arna["memory"]["updates"] >= 6 and "a house" in arna["memory"]["fields"]["updated_description"]
    path = np.diff(np.array(record["trajectory"])[:, :2], axis=0)
    assert np.linalg.norm(path, axis=1).sum() > 1.0                      # frontier goals were driven to
    assert arna["objects"] and arna["rooms"]
    assert model.kinds["FunctionCallImplementation"] == 1 and model.kinds["text"] == 1

    replayed = run(dataset, ReplayClient(transcript), physics=physics)
    assert replayed["actions"] == record["actions"]
    assert replayed["agent_trace"]["arna"]["answer"] == "B"


def test_the_interpreter_resumes_at_the_chosen_line_within_the_grammar():
    plan = {"main": [{"while": {"not": {"found": "seen"}}, "max_iterations": 3, "body": [
                         EXPLORE, {"step": "getinfo", "goal": "is it here?", "as": "seen"}]},
                     {"if": {"found": "seen"}, "then": [{"step": "analyze", "goal": "look closer"}, EXPLORE],
                      "else": [{"step": "rotate", "goal": "turn"}]},
                     {"answer": "done"}]}
    program = validate(plan, CHECKERS)
    assert program.listing().splitlines()[:8] == [
        "main (line numbers):", "  1. WHILE not found(seen):", "    2. EXPLORE(look around)",
        "    3. GETINFO(is it here?) -> seen", "  4. IF found(seen):", "    5. ANALYZE(look closer)",
        "    6. EXPLORE(look around)", "    else: 7. ROTATE(turn)"]

    def drive(choices, verdicts):
        ran, asked = [], []

        def execute(stmt):
            ran.append(stmt.get("step") or "answer")
            return type("Result", (), {"found": True})()   # the tool's flag, which the judge overrides
            yield

        def select(line, stmt):
            asked.append(line)
            return choices.get(len(asked))
            yield

        interpreter = Interpreter(program, execute, 100, select=select, judge=lambda var: next(verdicts))
        for _ in interpreter.run():
            pass
        return ran, asked

    # in order, the judge (not the flag) keeps the loop going until its limit
    assert drive({}, iter([False] * 4))[0] == ["explore", "getinfo"] * 3 + ["rotate", "answer"]
    # the first choice jumps into the if's then-branch: it runs on, then after the if
    ran, asked = drive({1: 6}, iter([False]))
    assert ran == ["explore", "answer"] and asked == [2, 6, 8]
    # a jump back into the loop body: the loop goes on with its remaining iterations
    ran, _ = drive({3: 3}, iter([False, False, False, True, True]))
    assert ran == ["explore", "getinfo", "getinfo", "explore", "getinfo", "analyze", "explore", "answer"]


def test_the_model_chooses_the_next_step_out_of_program_order_and_replays(dataset, tmp_path):
    """LOOP_PLAN's lines: 1 WHILE not found(target), 2 EXPLORE, 3 ObjectInterface -> target,
    4 ANSWER. The model skips line 2 at first (line 3 instead), then lets the loop run; it
    judges found(target) true on the third check although the tool found nothing."""
    jumped = []

    def next_step(request):
        reply = answer_at_the_answer_step(request)
        if "Next plan step:\nline 2:" in request.messages[-1].text and not jumped:
            jumped.append(True)
            return {**reply, "next_step": "3"}
        return reply

    verdicts = iter([False, False, True])
    model = ARNAScript({"NextStep": next_step,
                        "ConditionCheck": lambda r: {"rationale": "memory", "holds": next(verdicts)}})
    transcript = tmp_path / "calls.jsonl"
    record = run(dataset, RecordingClient(model, transcript))
    arna, steps = record["agent_trace"]["arna"], record["agent_trace"]["steps"]
    calls = [c["tool"] for s in steps for c in s.get("tool_calls", [])]
    assert calls == ["ObjectInterface", "ExploreInterface", "ObjectInterface"]   # line 3 came first
    assert arna["out_of_order_steps"] == 1 and steps[0]["jumps"] == [{"from": 2, "to": 3}]
    conditions = [c for s in steps for c in s.get("conditions", [])]
    assert [(c["holds"], c["tool_flag"]) for c in conditions] == [(False, False)] * 2 + [(True, False)]
    assert arna["answer"] == "B" and record["fail_reason"] == "stop"
    first = next(c for c in steps[0]["consultations"] if c["purpose"] == "next_step")["messages"][1]["content"]
    assert "  4. ANSWER(report what was found)" in first and "Next plan step:\nline 2: EXPLORE" in first

    replayed = run(dataset, ReplayClient(transcript))
    assert replayed["actions"] == record["actions"] and replayed["agent_trace"]["arna"] == arna


def test_a_next_step_naming_no_line_is_a_function_call_error(dataset):
    model = ARNAScript({"NextStep": lambda r: {"rationale": "r", "terminal": False, "next_step": "line 99"}})
    record = run(dataset, model)
    arna = record["agent_trace"]["arna"]
    assert arna["outcome_reason"] == "function_call_error" and "names no line" in arna["function_call_errors"][0]


def test_the_model_may_run_a_reasoning_function_before_the_next_step(dataset):
    plan = {"functions": {"recall": [{"tool": "MemoryReadInterface", "args": {"next_step": "x", "rationale": "y"},
                                      "as": "m"}, {"return": "m"}]},
            "main": [{"while": {"always": True}, "max_iterations": 2, "body": [EXPLORE]}, {"answer": "done"}]}
    asked = iter([{"rationale": "recall first", "terminal": False, "run_function": "recall"}])

    def next_step(request):
        return next(asked, None) or answer_at_the_answer_step(request)

    record = run(dataset, ARNAScript({"FunctionCallImplementation": lambda r: {"rationale": "r", "plan": plan},
                                      "NextStep": next_step}))
    calls = [c["tool"] for s in record["agent_trace"]["steps"] for c in s.get("tool_calls", [])]
    assert calls == ["MemoryReadInterface", "ExploreInterface", "ExploreInterface"]
    assert record["agent_trace"]["arna"]["answer"] == "B"


BAD_PLAN = {"rationale": "x", "plan": {"main": [{"exec": "__import__('os').system('id')"}]}}


def test_a_plan_that_cannot_be_repaired_ends_the_run_as_the_paper_does(dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    model = ARNAScript({"FunctionCallImplementation": lambda r: BAD_PLAN})
    record = run(dataset, RecordingClient(model, transcript), max_steps=4)
    arna = record["agent_trace"]["arna"]
    assert record["fail_reason"] == "inconclusive" and arna["outcome_reason"] == "function_call_error"
    assert arna["plan_rejections"] == 2 and "plan_source" not in arna["workflow"] and record["actions"] == []
    assert arna["function_call_errors"] == ["implementation: no plan in the grammar after 2 tries"]
    assert model.kinds["tools"] == 0 and record["agent_trace"]["fallbacks"] == 0
    replayed = run(dataset, ReplayClient(transcript), max_steps=4)       # from the transcript alone
    assert replayed["agent_trace"]["arna"] == arna and replayed["actions"] == []


def test_with_fallback_plan_an_out_of_grammar_plan_is_rejected_counted_and_replaced(dataset):
    bad = BAD_PLAN
    model = ARNAScript({"FunctionCallImplementation": lambda r: bad}, cost=0.0)
    record = run(dataset, model, {"fallback_plan": True}, max_steps=4)
    arna = record["agent_trace"]["arna"]
    assert arna["plan_rejections"] == 2 and arna["workflow"]["plan_source"] == "fallback"
    assert all("unknown statement" in problems[0] for problems in arna["plan_rejection_problems"])
    assert arna["workflow"]["plan"] == {"functions": {}, "main": [
        {"while": {"always": True}, "max_iterations": 50, "body": [{"step": "explore", "goal": "explore the nearest promising frontier"}]}]}
    retry = [r for r in model.requests if model.kind(r) == "FunctionCallImplementation"][1]
    assert "Your previous plan was rejected" in retry.messages[-1].text
    assert record["agent_trace"]["fallbacks"] >= 1 and record["fail_reason"] == "step_budget"

    answers = iter([bad, {"rationale": "ok", "plan": LOOP_PLAN}])
    record = run(dataset, ARNAScript({"FunctionCallImplementation": lambda r: next(answers)}), max_steps=3)
    assert record["agent_trace"]["arna"]["plan_rejections"] == 1
    assert record["agent_trace"]["arna"]["workflow"]["plan_source"] == "model"


@pytest.mark.slow
@pytest.mark.parametrize(("config", "handlers", "reason"), [
    ({"max_plan_statements": 3}, {}, "statement_limit"),
    ({"max_wall_s": 1e-6}, {}, "time_limit"),
    ({"max_cost_usd": 0.012}, {}, "cost_limit"),
    ({"max_cost_usd": 0.012, "perception": "vlm"}, {}, "cost_limit"),
    ({"max_tokens_per_episode": 2000}, {}, "cost_limit"),
    ({}, {"tools": lambda r: ("ExploreInterface", {"rationale": "r", "strategy": "fly"})}, "function_call_error"),
    ({}, {"NextStep": lambda r: "I think we should keep exploring."}, "function_call_error"),
    ({}, {"MemoryUpdate": lambda r: {"updated_description": "only one field"}}, "function_call_error"),
])
def test_budgets_end_the_run_inconclusive_with_the_reason(dataset, config, handlers, reason):
    model = ARNAScript(handlers)
    record = run(dataset, model, config)
    arna = record["agent_trace"]["arna"]
    assert record["error"] is None and record["fail_reason"] == "inconclusive"
    assert arna["outcome_reason"] == reason and arna["answer"] is None
    assert record["agent_trace"]["steps"][-1]["action"] == {"inconclusive": reason}
    if "max_plan_statements" in config:
        assert arna["statements_executed"] == 3 and "3 statements" in arna["terminated"]
    if "max_tokens_per_episode" in config:
        assert 2000 <= record["agent_trace"]["tokens"]["prompt"] + record["agent_trace"]["tokens"]["completion"]
    elif reason == "cost_limit":
        assert 0.012 <= arna["list_cost_usd"] < 0.012 + 0.002   # the crossing call completes, no more
    if "tools" in handlers:
        assert len(arna["function_call_errors"]) == 1 and model.kinds["tools"] == 2   # the call and its repair
    for role in ("NextStep", "MemoryUpdate"):   # a structured output that never followed its schema
        if role in handlers:
            assert len(arna["function_call_errors"]) == 1 and model.kinds[role] == 2   # the answer and its repair
            assert arna["function_call_errors"][0].startswith({"NextStep": "next_step", "MemoryUpdate": "memory_update"}[role])


def test_the_step_budget_is_the_envs_and_an_unpriced_model_needs_a_token_budget(dataset):
    record = run(dataset, ARNAScript(), max_steps=5)
    assert record["fail_reason"] == "step_budget" and len(record["actions"]) == 5
    assert record["agent_trace"]["arna"]["outcome_reason"] is None
    prompt = next(c for c in record["agent_trace"]["steps"][0]["consultations"] if c["purpose"] == "next_step")
    assert "5 environment steps left" in prompt["messages"][1]["content"]
    unpriced = run(dataset, ARNAScript(cost=None), max_steps=5)
    assert "has no price" in unpriced["error"] and "max_tokens_per_episode" in unpriced["error"]
    with pytest.raises(Exception, match="max_env_steps"):
        make_agent("arna", {"max_env_steps": 500})


def test_the_time_budget_ends_a_run_whose_plan_never_moves(dataset, monkeypatch):
    """Model calls between two environment steps still count against max_wall_s."""
    import vlnverse.agents.arna.agent as arna_agent

    clock = iter(range(10**6))
    monkeypatch.setattr(arna_agent.time, "monotonic", lambda: float(next(clock)))
    memory = {"tool": "MemoryReadInterface", "args": {"next_step": "n", "rationale": "r"}}
    plan = {"main": [{"while": {"always": True}, "max_iterations": 50, "body": [memory]}]}
    model = ARNAScript({"FunctionCallImplementation": lambda r: {"rationale": "r", "plan": plan}})
    record = run(dataset, model, {"max_wall_s": 30})
    assert record["agent_trace"]["arna"]["outcome_reason"] == "time_limit"
    assert sum(model.kinds.values()) < 40 and len(record["actions"]) == 0


def test_non_finite_tool_arguments_are_function_call_errors(dataset):
    rotate = ("ExploreInterface", {"rationale": "r", "strategy": "rotate_in_place", "angle_deg": float("inf")})
    record = run(dataset, ARNAScript({"tools": lambda r: rotate}), max_steps=4)
    assert record["error"] is None
    assert record["agent_trace"]["arna"]["outcome_reason"] == "function_call_error"


def test_the_map_is_built_from_observations_not_the_privileged_scene_graph(dataset, monkeypatch):
    import vlnverse.scene.scene_graph as scene_graph

    clean = run(dataset, ARNAScript(), max_steps=4)
    truth = {}

    def poison(env):
        scene = env.unwrapped.scene
        for obj in scene.objects:
            truth.setdefault(obj.category, []).append((obj.aabb_min[:2] + obj.aabb_max[:2]) / 2)
        fake = [dataclasses.replace(o, category="unicorn", aabb_min=o.aabb_min + 50.0, aabb_max=o.aabb_max + 50.0)
                for o in scene.objects]
        env.unwrapped.scene = dataclasses.replace(scene, objects=fake)

    def poisoned_graph(*args, **kwargs):
        graph = real_graph(*args, **kwargs)
        for _, data in graph.nodes(data=True):
            data.update(category="unicorn", position=(99.0, 99.0, 0.0))
        return graph

    real_graph = scene_graph.build_scene_graph
    monkeypatch.setattr(scene_graph, "build_scene_graph", poisoned_graph)
    dirty = run(dataset, ARNAScript(), max_steps=4, env_hook=poison)
    assert "unicorn" not in json.dumps(dirty["agent_trace"])
    assert dirty["agent_trace"]["arna"]["objects"] == clean["agent_trace"]["arna"]["objects"]
    assert dirty["actions"] == clean["actions"]
    located = 0
    for name, position in clean["agent_trace"]["arna"]["objects"].items():
        category = name.rsplit("_", 1)[0]
        if category in truth:
            located += min(np.linalg.norm(np.array(position) - c) for c in truth[category]) < 1.5
    assert located >= 0.8 * len(clean["agent_trace"]["arna"]["objects"]) > 0


def test_long_horizon_stops_at_each_goal_then_ends(dataset):
    record = run(dataset, ARNAScript({"NextStep": answer_at_the_answer_step}), {"privileged_subgoals": True},
                 task="long_horizon", max_steps=60)
    legs = len(record["goals"])
    steps = record["agent_trace"]["steps"]
    assert legs > 1 and len(record["stops"]) == legs and record["fail_reason"] == "stop"
    assert [s["leg_stop"] for s in steps if "leg_stop" in s] == list(range(1, legs))
    prompts = [c["messages"][1]["content"] for s in steps for c in s.get("consultations", []) if c["purpose"] == "next_step"]
    assert f"You are now on goal {legs} of {legs}." in prompts[-1]


def test_vlm_perception_places_the_models_labels_with_depth(dataset):
    def perceive(request):
        views = sum(len(m.images) for m in request.messages)
        assert views > 0
        return {"room": "Living Room", "objects": [{"view": 0, "label": "red chair", "column": 0.5}]}

    model = ARNAScript({"Perception": perceive})
    record = run(dataset, model, {"perception": "vlm"}, max_steps=3)
    arna = record["agent_trace"]["arna"]
    assert "red_chair_1" in arna["objects"] and arna["rooms"][0] == "living_room_1"
    assert model.kinds["Perception"] >= 1 and arna["workflow"]["targets"] == "chair, sofa"
    first = next(r for r in model.requests if model.kind(r) == "Perception")
    assert "Objects of interest:\nchair, sofa" in first.messages[-1].text   # the workflow came first
    assert not any("semantic" in name for name in make_agent("arna", {"perception": "vlm", **SMALL}).sensors)


def test_config_is_validated():
    from vlnverse.errors import ConfigError

    for bad in ({"workflow": "tree"}, {"max_plan_statements": 0}, {"max_cost_usd": -1}, {"max_wall_s": -2},
                {"fallback_plan": "yes"}):
        with pytest.raises(ConfigError):
            make_agent("arna", copy.deepcopy(bad))


@pytest.mark.parametrize("native", [True, False])
def test_the_openai_client_calls_arnas_tools_on_a_loopback_server(dataset, monkeypatch, native):
    import re

    from tests.agents.arna_script import DEFAULTS
    from vlnverse.llm.loopback import LoopbackServer, Reply

    def answer(body):
        system = body["messages"][0]["content"]
        system = system if isinstance(system, str) else " ".join(p.get("text", "") for p in system)
        if "tools" in body or "You can call these tools:" in system:
            name, arguments = DEFAULTS["tools"](None)
            if "tools" in body:
                return Reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])
            return json.dumps({"tool": name, "arguments": arguments})
        fmt = body.get("response_format") or {}
        title = fmt.get("json_schema", {}).get("name") if fmt.get("type") == "json_schema" else \
            next(iter(re.findall(r'"title": "(\w+)"', system)), None)
        return json.dumps(DEFAULTS[title](None)) if title else DEFAULTS["text"](None)

    monkeypatch.setenv("VLNVERSE_TEST_ARNA_KEY", "sk-test")
    with LoopbackServer(answer) as server:
        options = "" if native else "&native_tools=false&structured_output=false"
        record = run(dataset, None, {"llm": f"openai:gpt-4o?base_url={server.url}"
                                     f"&api_key_env=VLNVERSE_TEST_ARNA_KEY&max_retries=0&timeout=10{options}"},
                     max_steps=4)
    offered = [r for r in server.requests if "tools" in r]
    if native:
        assert offered and {t["function"]["name"] for t in offered[0]["tools"]} == {"ExploreInterface"}
    else:
        assert not offered and any("You can call these tools:" in json.dumps(r["messages"]) for r in server.requests)
    calls = [c for s in record["agent_trace"]["steps"] for c in s.get("tool_calls", [])]
    assert calls and calls[0]["tool"] == "ExploreInterface" and calls[0]["found"]
    assert record["fail_reason"] == "step_budget" and record["agent_trace"]["arna"]["outcome_reason"] is None
    assert record["agent_trace"]["tokens"]["prompt"] > 0 and record["agent_trace"]["calls"] == len(server.requests)


# -- EQA --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def eqa_dataset(tmp_path_factory):
    from tests.bundled import bundled_dataset

    return bundled_dataset(tmp_path_factory.mktemp("arna_eqa"), tasks=("eqa",), per_scene=1)


def run_eqa(dataset, model, config=None, max_steps=30):
    ds = EpisodeDataset.open(dataset)
    episode = ds.episodes(None, "eqa")[0]
    agent = make_agent("arna", {"perception": "gt", **SMALL, **(config or {})}, llm=model)
    env = NavEnv(str(ds.scene_file(episode)), physics="tel_hop", action_space=agent.action_space,
                 sensors=agent.sensors, max_episode_steps=max_steps, task="eqa")
    try:
        record, _ = run_episode(env, agent, episode, physics="tel_hop")
    finally:
        env.close()
    return record, episode


@pytest.mark.slow
@pytest.mark.parametrize("how", ["right", "wrong", "by_text", "unnamed", "budget"])
def test_eqa_episodes_end_correct_incorrect_or_inconclusive(eqa_dataset, how):
    ds = EpisodeDataset.open(eqa_dataset)
    question = ds.episodes(None, "eqa")[0].question

    def next_step(request):
        reply = answer_at_the_answer_step(request)
        if reply["terminal"]:
            assert question.text in request.messages[-1].text and "D) " in request.messages[-1].text
            reply["answer"] = {"right": "ABCD"[question.answer] + ")", "wrong": "ABCD"[(question.answer + 1) % 4],
                               "by_text": question.options[question.answer], "unnamed": "the blue one"}[how]
        return reply

    record, _ = run_eqa(eqa_dataset, ARNAScript({"NextStep": next_step}), max_steps=2 if how == "budget" else 30)
    expected = {"right": ("correct", None), "by_text": ("correct", None), "wrong": ("incorrect", None),
                "unnamed": ("inconclusive", "no_answer"), "budget": ("inconclusive", "step_limit")}[how]
    assert (record["outcome"], record["outcome_reason"]) == expected
    assert record["answer_correct"] == (expected[0] == "correct")
    assert record["metrics"][expected[0]] == 1.0


def test_option_index_reads_letters_and_option_texts():
    from vlnverse.agents.arna.agent import option_index

    options = ("red", "blue", "green", "dark red")
    assert [option_index(a, options) for a in ("B", "c)", "Option D.", "green", "  Dark Red ", "A) red")] == [1, 2, 3, 2, 3, 0]
    assert option_index("purple", options) is None and option_index(None, options) is None
    assert option_index("red or blue", options) is None
    beds = ("sofa", "bed", "tv", "tv stand")
    assert [option_index(a, beds) for a in ("a bed", "A bed.", "the tv stand", "(B)", "bedroom")] == [1, 1, 3, 1, None]


# -- the agent's own map --------------------------------------------------------------------

def _corner_grid():
    from vlnverse.agents.arna.worldmodel import FREE, OBSTACLE, OccupancyGrid

    grid = OccupancyGrid(np.zeros(2), extent=6.0, resolution=0.1)
    grid.grid[:] = FREE
    wall = np.array([[1.0, y] for y in np.arange(-3.0, 0.0, 0.05)])   # a wall ending in a corner at (1, 0)
    grid.mark(wall, OBSTACLE)
    return grid, wall


@pytest.mark.parametrize("start", [(0.5, -0.5), (0.8, -0.5)])   # clear of the wall / already 0.2 m from it
def test_paths_and_straight_moves_keep_clear_of_mapped_obstacles(start):
    grid, wall = _corner_grid()
    start = np.array(start)
    path = grid.plan(start, np.array([1.6, -1.0]), 0.35)
    assert path is not None and np.linalg.norm(path[-1] - [1.6, -1.0]) < 0.2
    here = np.min(np.linalg.norm(wall - start, axis=1))
    allowed = min(0.35, here) - 0.08                                     # cell quantisation
    position = start
    for _ in range(10):                                                  # drive it, one straight move at a time
        path = grid.plan(position, np.array([1.6, -1.0]), 0.35)
        if not path or np.linalg.norm(path[-1] - position) < 0.3:
            break
        target = grid.straight(position, path, 1.5)
        for p in np.linspace(position, target, 30):
            assert np.min(np.linalg.norm(wall - p, axis=1)) >= allowed, (position, target)
        position = target
    assert np.linalg.norm(position - [1.6, -1.0]) < 0.5                  # it got round the corner


def test_the_toolset_answers_from_the_agents_own_graph():
    from pydantic import ValidationError

    from vlnverse.agents.arna.tools import ToolLibrary, tool_specs
    from vlnverse.agents.arna.worldmodel import ObjectNode

    grid, _ = _corner_grid()
    from vlnverse.agents.arna.worldmodel import SceneMemoryGraph

    graph = SceneMemoryGraph(grid)
    grid.grid[:, -10:] = 0                                               # unknown beyond x = 2
    graph.objects["sofa_1"] = ObjectNode("sofa_1", "sofa", np.array([0.0, 2.0]), 10.0)
    graph.objects["lamp_1"] = ObjectNode("lamp_1", "lamp", np.array([0.5, 2.5]), 10.0)
    room = graph.add_place(np.array([0.0, 1.0]), "Living Room")
    rgb = np.zeros((32, 32, 3), dtype=np.uint8)
    graph.add_image(3, np.array([0.0, 0.0, 0.0, np.pi / 2]), np.pi / 2, rgb, ["sofa_1"], room)
    tools = ToolLibrary(graph, lambda: np.array([0.0, 0.0, 0.0, 0.0]), np.random.default_rng(0),
                        lambda rationale, records, joint: f"saw {len(records)}", lambda: "memory text")

    def call(name, **args):
        return tools.call(name, {"rationale": "test", **args})

    assert {t["name"] for t in tool_specs()} == set(INTERFACES)
    found = call("ObjectInterface", information_action="get_object_location", object_action="sofa")
    assert found.found and "sofa_1 is at (0.0, 2.0), 2.0 m left of you" in found.text
    near = call("ObjectInterface", information_action="get_nearby_objects", object_action="sofa_1")
    assert near.found and "lamp_1" in near.text
    missing = call("ObjectInterface", information_action="get_object_location", object_action="piano")
    assert not missing.found and "Known objects: lamp_1, sofa_1" in missing.text
    assert call("RoomInterface", information_action="get_image_ids_of_the_room", room_action="living_room_1").found
    assert "sofa_1" in call("RoomInterface", information_action="get_detected_objects_in_room",
                            room_action="living_room").text
    assert call("SensorInterface", sensor_action="get_image_ids_given_description", description="a sofa").text \
        .endswith("[0]")
    goal = call("GoToInterface", motion_action="to_known_node", node_name="sofa_1").goal
    assert goal is not None and np.allclose(goal.point, [0.0, 2.0])
    assert call("GoToInterface", motion_action="to_point", point_to_investigate=7).goal is None
    assert "Unknown frontier 'Q'; the frontiers are A" in call("ExploreInterface", strategy="goto_frontier", frontier="Q").text
    tools.frontier_points = {letter: np.array([float(i), 0.0]) for i, letter in enumerate("ABCDEF")}
    assert call("ExploreInterface", strategy="goto_frontier", frontier="frontier B").text == "Exploring frontier B."
    for vague in ("frontier", "B or C", "Frontier: the door"):       # exactly one letter, as the shared parser
        assert not call("ExploreInterface", strategy="goto_frontier", frontier=vague).found
    tools.frontier_points, tools.visited_frontiers = {}, []
    assert call("ExploreInterface", strategy="goto_frontier", frontier="a").goal.point[0] == pytest.approx(1.95)
    assert call("ExploreInterface", strategy="rotate_in_place", angle_deg=-90).goal.rotate == pytest.approx(-np.pi / 2)
    overlay = call("OverlayInterface", fusion_action="overlay_on_images", objects=["sofa_1"], image_ids=[0])
    (label, marked), = overlay.images
    assert "sofa_1 (marker 1)" in overlay.text and marked[:, 15:17].any() and not marked[:, :10].any()
    assert call("VisualAnalysisInterface", image_ids=[0, 99]).text.endswith("saw 1")
    assert call("MemoryReadInterface", next_step="n").text == "memory text"
    with pytest.raises(ValidationError):
        call("ExploreInterface", strategy="teleport")


@pytest.mark.llm_live
def test_arna_against_a_live_endpoint(dataset):
    import os

    from vlnverse.llm import make_llm

    key_env = "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else "none"
    llm = make_llm(f"openai:{os.environ.get('VLNVERSE_LLM_MODEL', 'qwen3-vl-4b')}?api_key_env={key_env}")
    record = run(dataset, llm, {"max_tokens_per_episode": 400_000}, max_steps=8)   # an unpriced local model
    trace = record["agent_trace"]
    assert record["error"] is None, record["error"]
    assert trace["arna"]["workflow"]["termination"] and trace["calls"] > 5 and trace["tokens"]["prompt"] > 0
