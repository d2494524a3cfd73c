"""DiscussNav walked through complete episodes with a scripted panel of experts.

The panel answers each expert role by its system prompt; the navigator's N predictions
are scripted per step. Episodes are recorded to a transcript and replayed from it alone.
The last tests drive the agent through the real ``openai`` client on a loopback server.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import pytest

from tests.agents.conftest import SMALL
from tests.agents.test_agents_episodes import run
from vlnverse.agents.discussnav import EXPERTS, NAVIGATOR_PROMPT
from vlnverse.agents.panorama import direction_phrase
from vlnverse.errors import ConfigError
from vlnverse.eval.registry import make_agent
from vlnverse.eval.reporting.viewer import render_episode_page
from vlnverse.llm.base import LLMClient
from vlnverse.llm.transcript import RecordingClient, ReplayClient
from vlnverse.llm.types import LLMRequest, LLMResponse, Usage

ROLES = {text.split(".")[0]: role for role, text in EXPERTS.items()}
DECOMPOSED = {"actions": ["Stop by the sofa", "Walk past the table"]}          # the wrong order
CHECKED = {"order_correct": False, "actions": ["Walk past the table", "Stop by the sofa"],
           "landmarks": [{"name": "table", "type": "furniture"}, {"name": "living room", "type": "room"}]}
ESTIMATE = {"thought": "The table is behind me.", "executed": ["Walk past the table"],
            "in_progress": ["Stop by the sofa"], "waiting": []}


def agree(options):
    return [options[0]] * 5


class Panel:
    """The experts' answers and the navigator's predictions (``plan[step](options)``)."""

    def __init__(self, plan):
        self.plan = plan
        self.asked: list[tuple[str, str]] = []

    def answer(self, system: str, user: str, n: int, seed: int | None) -> list[str]:
        role = ROLES.get(system.split(".")[0], "navigator")
        self.asked.append((role, user))
        if role == "navigator":
            step = len(re.findall(r"^(?:\[Step \d+\]|step \d+:)", user, re.M))
            options = re.findall(r"exactly one of: ([A-Z, ]+)\.", user)[-1].split(", ")
            picks = self.plan[step](options)
            picks = picks[:n] if seed is None else [picks[seed]]
            return [json.dumps({"thought": f"I think {p} leads on.", "action": p}) for p in picks]
        if role == "action_decomposition":
            return [json.dumps(DECOMPOSED)]
        if role == "landmark_extraction":
            return [json.dumps(CHECKED)]
        if role == "scene_observation":
            kind, direction = re.match(r"What (\w+) can you see in direction (\d+)", user).groups()
            return [f"A {kind} thing in direction {direction}."]
        if role == "object_detection":
            return ["sofa | lamp"]
        if role == "trajectory_summary":
            return [user.splitlines()[-1].split(" Decision:")[0]]
        if role == "completion_estimation":
            return [json.dumps(ESTIMATE)]
        if role == "thought_fusion":
            return [json.dumps({a: f"fused {a}" for a in re.findall(r"Prediction (\w+):", user)})]
        assert role == "decision_testing"
        last = re.findall(r"Prediction: (\w+)", user)[-1]             # the minority direction
        return [json.dumps({"thought": f"{last} fits the scene", "action": last})]


class PanelModel(LLMClient):
    """The panel as a client; ``honours_n`` False answers one choice whatever ``n`` is."""

    def __init__(self, panel: Panel, honours_n: bool = True) -> None:
        super().__init__("panel-model")
        self.panel, self.honours_n = panel, honours_n

    def send(self, request: LLMRequest) -> LLMResponse:
        params = request.params
        texts = self.panel.answer(request.messages[0].text, request.messages[-1].text,
                                  params.n if self.honours_n else 1, params.seed)
        cut = self.cut(texts[0], params.max_tokens)
        return LLMResponse(text=cut or texts[0], model=self.model, choices=(cut,) if cut else tuple(texts),
                           key=request.key, usage=Usage(10, 5 * len(texts)), finish_reason="length" if cut else "stop")

    def cut(self, text: str, max_tokens: int | None) -> str | None:
        """A reply longer than the budget (4 characters a token) comes back cut, as a server does."""
        return text[: 4 * max_tokens] if max_tokens is not None and len(text) > 4 * max_tokens else None


def discussions(record):
    return [s["discussion"] for s in record["agent_trace"]["steps"]]


def test_a_discussed_episode_fuses_only_on_disagreement_and_replays(dataset, tmp_path):
    plan = [agree, lambda o: [o[0]] * 3 + [o[1]] * 2, lambda o: ["STOP"] * 5]
    panel = Panel(plan)
    transcript = tmp_path / "calls.jsonl"
    record, episode = run(dataset, "discussnav", RecordingClient(PanelModel(panel), transcript))
    assert record["error"] is None and record["fail_reason"] == "stop"
    first, second, third = discussions(record)
    steps = record["agent_trace"]["steps"]

    # Instruction analysis once: the landmark expert's corrected action order is used.
    analysis = first["instruction_analysis"]
    assert analysis["decomposition"]["actions"] == DECOMPOSED["actions"]
    assert analysis["landmarks"]["order_correct"] is False and analysis["landmarks"]["actions"] == CHECKED["actions"]
    assert "instruction_analysis" not in second
    nav0 = steps[0]["messages"][1]["content"]
    assert "1. Walk past the table\n2. Stop by the sofa" in nav0 and "table (furniture), living room (room)" in nav0

    # Vision: all 12 directions (30 degrees each, §IV-A) asked by landmark type, not only the
    # candidates'; gt tags come from the semantic sensor; the navigator picks a place.
    ids = [c["id"] for c in steps[0]["candidates"]]
    asked = [q["question"] for q in first["vision"]["questions"]]
    assert asked == [f"What {k} can you see in direction {d} ({direction_phrase(math.radians(30 * d))})?"
                     for d in range(12) for k in ("furniture", "room")]
    assert len({c["id"] for c in steps[0]["candidates"]}) < 12
    assert first["vision"]["objects_from"] == "semantic" and f"{ids[0]}: " in nav0
    view0 = int(re.search(rf"^{ids[0]}: .*\(view (\d+)", nav0, re.M)[1])
    assert re.search(rf"^direction {view0} \([a-z-]+; places here: [A-Z, ]*{ids[0]}[A-Z, ]*\): A furniture thing in "
                     rf"direction {view0}\. A room thing in direction {view0}\. Objects: ", nav0, re.M)
    assert len(re.findall(r"^direction \d+ \(", nav0, re.M)) == 12

    # Step 0: five agreeing predictions, no fusion. Step 1: 3 vs 2, fusion and testing pick the 2.
    assert first["fusion"] is False and len(first["predictions"]) == 5 and "testing" not in first
    options = steps[1]["options"]
    assert [p["prediction"] for p in second["predictions"]] == [options[0]] * 3 + [options[1]] * 2
    assert second["fusion"] is True and second["fused"][0] == {"prediction": options[0], "thought": f"fused {options[0]}"}
    assert second["testing"]["prediction"] == options[1] == second["decision"]
    chosen = next(c for c in steps[1]["candidates"] if c["id"] == options[1])
    assert record["actions"][1][0] == pytest.approx(chosen["distance_m"], abs=1e-3)
    assert third["fusion"] is False and third["decision"] == "STOP"

    # Completion estimation from step 1 on, fed back into the navigator's prompt.
    assert "completion" not in first and "No action has been executed yet." in nav0
    nav1 = steps[1]["messages"][1]["content"]
    assert "Executed Actions: Walk past the table\nIn-progress Actions: Stop by the sofa" in nav1
    assert f"[Step 0] Observation: A furniture thing in direction {view0}." in nav1 and "I think" in nav1

    roles = record["agent_trace"]["roles"]
    calls = {role: counts["calls"] for role, counts in roles.items()}
    assert calls == {"action_decomposition": 1, "landmark_extraction": 1, "scene_observation": 2 * 12 * len(steps),
                     "trajectory_summary": 2, "completion_estimation": 2, "thought_fusion": 1,
                     "decision_testing": 1, "navigator": 3}
    assert roles["navigator"]["completion"] == 3 * 25 and record["agent_trace"]["calls"] == sum(calls.values())

    page = render_episode_page(record, {})                      # the episode viewer shows the discussion
    assert "disagreed: fused and tested" in page and f"decision {options[1]}" in page
    assert "scene_observation: What furniture can you see in direction 0 (forward)?" in page
    assert "tokens by role: action_decomposition" in page

    replayed, _ = run(dataset, "discussnav", ReplayClient(transcript))
    assert replayed["actions"] == record["actions"]
    assert replayed["agent_trace"]["steps"] == steps


@pytest.fixture(scope="module")
def fine_dataset(tmp_path_factory):
    from tests.bundled import bundled_dataset

    return bundled_dataset(tmp_path_factory.mktemp("fine_dataset"), per_scene=1, fine_ratio=1.0, tasks=("fine",))


def test_ablations_switch_expert_groups_and_n(dataset, fine_dataset, tmp_path):
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    plan = [lambda o: [o[0], o[1], o[1], o[0], o[1]], lambda o: ["STOP"] * 5]
    off = {"instruction_analysis": False, "vision_perception": False, "completion_estimation": False}
    record, _ = run(dataset, "discussnav", PanelModel(Panel(plan)), config={**off, "decision_testing": False})
    first = discussions(record)[0]
    assert first["fusion"] is False and first["decision"] == record["agent_trace"]["steps"][0]["options"][1]
    assert set(record["agent_trace"]["roles"]) == {"navigator"}     # majority vote, no expert at all
    nav1 = record["agent_trace"]["steps"][1]["messages"][1]["content"]
    assert "Your last steps:\nstep 0: moved to" in nav1 and "Landmarks" not in nav1

    panel = Panel([lambda o: [o[1]], lambda o: ["STOP"]])
    record, _ = run(dataset, "discussnav", PanelModel(panel), config={**off, "samples": 1})
    assert [len(d["predictions"]) for d in discussions(record)] == [1, 1]
    assert record["agent_trace"]["roles"]["navigator"]["calls"] == 2

    agent = make_agent("discussnav", {"perception": "gt", **SMALL}, llm=PanelModel(Panel(plan)))
    evaluate(EvalConfig(dataset=str(fine_dataset), out=str(tmp_path), agent="discussnav", task="fine",
                        episodes=1, physics=("strict",), plots=0, bootstrap=10), agent=agent)
    summary = (tmp_path / "summary.md").read_text()
    assert "LLM tokens by role" in summary and "| scene_observation |" in summary and "| navigator |" in summary
    with pytest.raises(ConfigError, match="decision_testing"):
        make_agent("discussnav", {"decision_testing": "yes"})


def test_vlm_experts_look_at_the_views_and_tag_them(dataset):
    record, _ = run(dataset, "discussnav", PanelModel(Panel([lambda o: ["STOP"] * 5])),
                    config={"perception": "vlm", "instruction_analysis": False})
    (step,) = record["agent_trace"]["steps"]
    looks = [c for c in step["consultations"] if c["purpose"] in ("scene_observation", "object_detection")]
    assert len(looks) == 2 * 12 and all("<image sha256:" in c["messages"][1]["content"] for c in looks)
    assert len({c["messages"][1]["content"].split("<image")[1] for c in looks}) == 12   # 12 different views
    assert step["discussion"]["vision"]["objects_from"] == "model"
    assert list(step["discussion"]["vision"]["objects"].values()) == [["sofa", "lamp"]] * 12
    assert "What objects can you see in direction 0 (forward)" in looks[0]["messages"][1]["content"]
    assert "Objects: sofa | lamp." in step["messages"][1]["content"]


@pytest.mark.slow
def test_the_openai_client_on_a_loopback_server_with_and_without_n(dataset, monkeypatch):
    from vlnverse.llm import make_llm
    from vlnverse.llm.loopback import LoopbackServer, Reply

    monkeypatch.setenv("VLNVERSE_TEST_LOOPBACK_KEY", "sk-loopback")
    for honours_n in (True, False):
        panel = Panel([lambda o: [o[0]] * 4 + [o[1]], lambda o: ["STOP"] * 5])

        def answer(body, panel=panel, honours_n=honours_n):
            system, user = (m["content"] for m in (body["messages"][0], body["messages"][-1]))
            user = user if isinstance(user, str) else "\n".join(p.get("text", "") for p in user)
            texts = panel.answer(system, user, body.get("n", 1) if honours_n else 1, body.get("seed"))
            return Reply(content=texts[0], choices=texts[1:])

        with LoopbackServer(answer) as server:
            llm = make_llm(f"openai:gpt-4?base_url={server.url}&api_key_env=VLNVERSE_TEST_LOOPBACK_KEY")
            record, _ = run(dataset, "discussnav", llm, config={"instruction_analysis": False,
                                                                "completion_estimation": False})
            navigator = [b for b in server.requests if "You guide a robot" in b["messages"][0]["content"]]
        assert record["error"] is None and record["fail_reason"] == "stop"
        first = discussions(record)[0]
        assert first["fusion"] is True and len(first["predictions"]) == 5
        assert llm.supports_n is honours_n
        if honours_n:        # one request per step carries all five samples
            assert [b["n"] for b in navigator] == [5, 5]
        else:                # the first asks n=5, gets one; the rest come as seeded single requests
            assert (navigator[0]["n"], navigator[0].get("seed")) == (5, None)   # concurrent: any order
            assert sorted((b.get("n", 1), b.get("seed")) for b in navigator[1:5]) == [(1, 1), (1, 2), (1, 3), (1, 4)]
            assert len(navigator) == 10


def paper_text() -> Path | None:
    """``<repo>/../shared/papers/discussnav.txt``, the repo being this checkout or, for a git
    worktree, its main checkout."""
    repo = Path(__file__).resolve().parents[2]
    roots = [repo]
    common = subprocess.run(["git", "-C", str(repo), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                            capture_output=True, text=True, timeout=30)
    if common.returncode == 0 and common.stdout.strip():
        roots.append(Path(common.stdout.strip()).parent)
    return next((p for r in roots if (p := r.parent / "shared" / "papers" / "discussnav.txt").is_file()), None)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", re.sub(r"-\n", "", text.lower()))


def shared_runs(text: str, paper: set[tuple[str, ...]], n: int = 12) -> list[str]:
    found = words(text)
    return [" ".join(found[i:i + n]) for i in range(len(found) - n + 1) if tuple(found[i:i + n]) in paper]


def test_no_prompt_repeats_12_words_of_the_paper(dataset):
    """Prompts in our own words: no run of 12 words shared with the paper, in the constants or
    in any message of a full discussion (every expert, fusion and testing included)."""
    path = paper_text()
    if path is None:
        pytest.skip("no ../shared/papers/discussnav.txt beside the repository")
    text = words(path.read_text())
    paper = {tuple(text[i:i + 12]) for i in range(len(text) - 11)}
    assert shared_runs("navigation agent who follows instruction to move in an indoor environment with "
                       "the least action steps", paper)                      # the check itself bites
    for text in [NAVIGATOR_PROMPT, *EXPERTS.values()]:
        assert shared_runs(text, paper) == [], text[:80]
    plan = [agree, lambda o: [o[0]] * 3 + [o[1]] * 2, lambda o: ["STOP"] * 5]
    record, _ = run(dataset, "discussnav", PanelModel(Panel(plan)))
    messages = [m["content"] for s in record["agent_trace"]["steps"]
                for m in s["messages"] + [m for c in s["consultations"] for m in c["messages"]]]
    assert {c["purpose"] for s in record["agent_trace"]["steps"] for c in s["consultations"]} == set(EXPERTS) - {
        "object_detection"}                                                 # gt: the sensor tags
    for text in messages:
        assert shared_runs(text, paper) == [], text[:80]


def test_the_reply_budget_fits_the_reasoning_and_cut_replies_are_counted(dataset):
    """Five detailed reasoning points need more than the shared 600-token default; a reply cut at
    the budget counts as a truncation, apart from the parse failure it causes."""
    thought = " ".join(f"({i}) " + "I compare the landmark with the view and the trajectory so far. " * 8
                       for i in range(1, 6))

    class Verbose(Panel):
        def answer(self, system, user, n, seed):
            texts = super().answer(system, user, n, seed)
            if system.startswith("You guide a robot"):
                return [json.dumps({"thought": thought, "action": json.loads(t)["action"]}) for t in texts]
            return texts

    assert len(thought) // 4 > 600
    record, _ = run(dataset, "discussnav", PanelModel(Verbose([lambda o: ["STOP"]])), config={"samples": 1})
    trace = record["agent_trace"]
    assert trace["truncations"] == 0 and trace["parse_failures"] == 0 and record["fail_reason"] == "stop"
    record, _ = run(dataset, "discussnav", PanelModel(Verbose([lambda o: ["STOP"]] * 3)),
                    config={"samples": 1, "max_reply_tokens": 600}, max_steps=2)
    trace = record["agent_trace"]
    # each step: the reply and its repair are cut, then the documented fallback moves the agent
    assert trace["truncations"] == trace["parse_failures"] == 4 and trace["failures"] == {"malformed": 4}
    assert trace["fallbacks"] == 2 and record["fail_reason"] == "step_budget"
