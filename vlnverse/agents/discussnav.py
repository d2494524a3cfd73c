"""``discussnav``: DiscussNav (Long et al., "Discuss before moving"; ``papers/discussnav.txt``).

Before every move the navigator discusses with domain experts, each a prompted model role
(§III-B, Fig. 3), in the order of §III-C:

1. **Instruction analysis** (once per episode): the *action decomposition* expert breaks
   the instruction into actions; the *landmark extraction* expert first checks the action
   order against the sentence structure (and gives the corrected order), then lists the
   landmarks with their types.
2. **Vision perception** (every step, per direction = candidate): the *scene observation*
   expert is asked by landmark type ("What furniture can you see in the current direction
   C?") and sees that direction's view (``vlm``) or its semantic-sensor object list
   (``gt``); the *object detection* expert tags the view (a VLM asked for tags, standing in
   for RAM), or in ``gt`` mode the semantic sensor gives the tags without a model call.
3. **Completion estimation** (every step after the first): the *trajectory summary* expert
   condenses the last step to ``[Step t] Observation: … Thought: …``; the *completion
   estimation* expert reads the actions, landmarks and trajectory and answers which actions
   are executed, in progress and waiting. Its answer goes into the navigator's prompt.
4. **Movement decision**: the navigator (Fig. 2's prompt) makes ``samples`` = N predictions
   (default 5 at temperature 1), each a thought and a prediction, in one request with ``n``
   where the server honours it, else concurrently. If they agree the agent moves.
5. **Decision testing** (only when they disagree): the *thought fusion* expert fuses the
   thoughts leading to the same direction; the *decision testing* expert (temperature 0)
   weighs the fused thought-prediction pairs against the scene and picks one of them.

Experts answer at ``expert_temperature`` (0) with one output. Each group can be switched
off (Table II's ablations), and ``samples: 1`` ablates the N predictions. A direction is a
candidate waypoint (its letter id); moving to it drives to that candidate. Each step's
trace has a ``discussion`` record (every expert's question and answer, the predictions,
whether fusion ran, the decision); tokens are counted per expert role.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.agents.base import EpisodeState, LLMWaypointAgent, StepView, majority
from vlnverse.agents.config import LLMAgentConfig, _positive
from vlnverse.agents.parsing import Decision, ReplyError, parse_reply
from vlnverse.agents.prompts import (
    STOP,
    Prompt,
    candidate_cards,
    dialogue_text,
    history_text,
    instruction_text,
    output_format,
)
from vlnverse.errors import ConfigError, LLMAnswerError
from vlnverse.eval.agent import EpisodeInfo
from vlnverse.llm.jsonanswer import extract_json
from vlnverse.llm.types import ChatMessage

NAVIGATOR_PROMPT = """\
You are a navigation agent who follows an instruction to move in an indoor environment with the
least action steps. You have discussed with multiple domain experts to collect information about
the navigation landmarks, your history navigation trajectory and the estimation of executed
actions in the given instruction. Now you can observe the current environment in different
directions, as provided by the vision perception experts. Your task is to predict moving to which
direction around you at the current step, based on the information from the multi-expert
discussions. You are encouraged to move to new positions to explore the environment, while
avoiding revisiting accessed positions in non-essential situations. If you feel struggling to
find the landmark or execute the action, you can try to execute the subsequent action and find
the next landmark. Your answer has two parts, "thought" and the prediction ("action"). In the
thought, think as detailed as possible following these procedures:
(1) Check the correctness of the action completion estimation based on the navigation trajectory.
(2) Check whether the latest executed action has been completed by comparing the current
environment and the landmark in the latest executed action.
(3) Determine the action you should execute and the landmark you should reach now.
(4) Analyze which direction in the current environment is most suitable to execute that action
and explain your reason.
(5) Predict moving to which direction based on your thought process.
In the prediction give only the direction id without other words. If you think you have arrived
at the destination, predict STOP. Your decision is very important: make it very carefully."""

EXPERTS = {
    "action_decomposition": (
        "You are an action decomposition expert. Your task is to detect all actions in the given "
        "navigation instruction. You need to ensure the integrity of each action. "
        'Reply with one JSON object: {"actions": ["<action 1>", "<action 2>", ...]}, in the order '
        "they are to be executed."),
    "landmark_extraction": (
        "You are a landmark extraction expert. You should first check the correctness of the action "
        "order by the sentence structure of the instruction (e.g. in \"stop just past the chart\" "
        "walking past comes before stopping). Then you should recognize the landmarks and categorize "
        "their types (room, furniture, infrastructure, decoration, appliance, color, ...). Ensure the "
        'integrity of each landmark. Reply with one JSON object: {"order_correct": true or false, '
        '"actions": ["<the actions in the correct order>"], "landmarks": [{"name": "<landmark>", '
        '"type": "<type>"}]}.'),
    "scene_observation": (
        "You are a scene observation expert. Your task is to answer visual questions about the scene "
        "based on your observation. Please provide as many details as possible, but only about what "
        "is asked."),
    "object_detection": (
        "You are an object detection expert (an image tagging model). List every object visible in "
        "the image as short tags separated by ' | ' and nothing else."),
    "trajectory_summary": (
        "You are a trajectory summary expert. Your task is to simplify the environment description "
        "and thought process in the navigation history: remove redundant objects and non-essential "
        "reasoning. Please follow the format: [Step t] Observation: ... Thought: ..."),
    "completion_estimation": (
        "You are a completion estimation expert. Your task is to estimate what actions in the "
        "instruction have been executed based on the navigation history and landmarks. In the "
        "thought, (1) check the passed landmarks in the navigation trajectory, (2) analyze the "
        "direction change at each movement step and (3) estimate what actions have been executed. "
        'Reply with one JSON object: {"thought": "...", "executed": ["<action>", ...], '
        '"in_progress": ["<action>", ...], "waiting": ["<action>", ...]}.'),
    "thought_fusion": (
        "You are a thought fusion expert. Your task is to fuse given thought processes into one "
        "thought. You need to reserve key information related to actions, landmarks and direction "
        'changes. Reply with one JSON object mapping each prediction to its fused thought: '
        '{"<prediction>": "<fused thought>", ...}.'),
    "decision_testing": (
        "You are a decision testing expert. Your task is to evaluate the feasibility of each movement "
        "prediction based on its thought process and the current environment. Then you make a final "
        "decision: select the most reliable prediction."),
}
#: The expert roles of each group (the ablation switches of Table II).
GROUPS = {
    "instruction_analysis": ("action_decomposition", "landmark_extraction"),
    "vision_perception": ("scene_observation", "object_detection"),
    "completion_estimation": ("trajectory_summary", "completion_estimation"),
    "decision_testing": ("thought_fusion", "decision_testing"),
}
GENERIC_LANDMARK = "objects"
_NUMBERED = re.compile(r"(?:\d+[.)]|[-*])\s*(\S.*)")  # on stripped lines: no backtracking
_PARENTHESIS = re.compile(r"\(([^()]*)\)")  # linear: a match attempt ends at the next parenthesis


@dataclass(frozen=True)
class DiscussNavConfig(LLMAgentConfig):
    """``discussnav`` settings: the shared ones (``samples`` is N, at ``temperature`` 1)
    plus the discussion's.

    Attributes:
        instruction_analysis: Discuss with the action decomposition and landmark
            extraction experts (Table II ablation switch).
        vision_perception: Discuss with the scene observation and object detection experts.
        completion_estimation: Discuss with the trajectory summary and completion
            estimation experts (off: the navigator reads its plain step history).
        decision_testing: Fuse disagreeing predictions and let the decision testing expert
            pick (off: majority vote).
        expert_temperature: Sampling temperature of every expert (0 in the paper).
        questions_per_direction: Landmark types asked about per direction (the first ones
            of the instruction; the paper asks 2).
        expert_workers: Expert calls made at the same time (the per-direction questions).
    """

    samples: int = 5
    temperature: float = 1.0
    local_map: bool = False
    ask_oracle: bool = False
    instruction_analysis: bool = True
    vision_perception: bool = True
    completion_estimation: bool = True
    decision_testing: bool = True
    expert_temperature: float = 0.0
    questions_per_direction: int = 2
    expert_workers: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= float(self.expert_temperature) <= 2.0:
            raise ConfigError(f"expert_temperature must be in [0, 2], got {self.expert_temperature!r}")
        for name in ("questions_per_direction", "expert_workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"discussnav.{name} must be a positive integer, got {value!r}")
            _positive("discussnav", **{name: value})
        for name in GROUPS:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"discussnav.{name} must be true or false")


@dataclass
class DiscussState(EpisodeState):
    """Episode memory: the instruction analysis, the summarized trajectory, the latest
    completion estimate and the raw record of the last step (awaiting its summary)."""

    analysed: bool = False
    actions: list[str] = field(default_factory=list)
    landmarks: list[tuple[str, str]] = field(default_factory=list)
    trajectory: list[str] = field(default_factory=list)
    estimation: str = ""
    last_step: str = ""
    scene: dict[str, str] = field(default_factory=dict)


class DiscussNavAgent(LLMWaypointAgent):
    """DiscussNav (see the module docs)."""

    config_class = DiscussNavConfig
    name = "discussnav"
    system_prompt = NAVIGATOR_PROMPT
    decision_role = "navigator"

    def new_state(self, episode: EpisodeInfo) -> DiscussState:
        return DiscussState(episode)

    # -- one step: discuss, then decide -------------------------------------------------

    def decide(self, view: StepView) -> Decision | None:
        cfg, state = self.config, self.state
        self.record["discussion"] = {}
        if cfg.instruction_analysis and not state.analysed:
            self.analyse_instruction(view.instruction)
        state.scene = self.perceive(view) if cfg.vision_perception else {}
        if cfg.completion_estimation and state.last_step:
            self.estimate_completion(view.instruction)
        prompt = self.build_prompt(view)
        prompt.section("Reply format", output_format(cfg.prompt_variant, dict(self.reply_fields(view)),
                                                     view.options))
        decision = self.choose(prompt, view, pick=lambda decisions: self.settle(decisions, view))
        self.record["discussion"]["decision"] = None if decision is None else decision.action
        return decision

    def ask(self, calls: Sequence[tuple[str, str | ChatMessage]], json: bool) -> list[str]:
        """The experts' answers to ``(role, question)`` calls, made concurrently."""
        cfg = self.config
        messages = [[ChatMessage.system(EXPERTS[role]),
                     question if isinstance(question, ChatMessage) else ChatMessage.user(question)]
                    for role, question in calls]
        responses = self.consult_many(list(zip(messages, (role for role, _ in calls), strict=True)),
                                      workers=cfg.expert_workers, temperature=cfg.expert_temperature, n=1,
                                      response_format="json" if json else "text")
        return [r.text for r in responses]

    def analyse_instruction(self, instruction: str) -> None:
        """Topic 1: actions, then landmarks with the action-order check."""
        state = self.state
        asked = f'Can you decompose actions in the instruction "{instruction}"?'
        (answer,) = self.ask([("action_decomposition", asked)], json=True)
        actions = _items(answer, "actions")
        question = (f'Can you extract landmarks in the instruction "{instruction}"?\n\n'
                    "The decomposed actions are:\n" + _numbered(actions))
        (reply,) = self.ask([("landmark_extraction", question)], json=True)
        checked = _json(reply)
        corrected = _items(reply, "actions") if isinstance(checked, dict) else []
        order_correct = not (isinstance(checked, dict) and checked.get("order_correct") is False and corrected)
        state.actions = actions if order_correct else corrected
        state.landmarks = _landmarks(reply)
        state.analysed = True
        self.record["discussion"]["instruction_analysis"] = {
            "decomposition": {"question": asked, "answer": answer, "actions": actions},
            "landmarks": {"question": question.splitlines()[0], "answer": reply,
                          "order_correct": order_correct, "actions": state.actions,
                          "landmarks": [{"name": n, "type": t} for n, t in state.landmarks]}}

    def perceive(self, view: StepView) -> dict[str, str]:
        """Topic 2: per direction, the scene observation expert by landmark type and the
        object tags; returns each direction's scene text."""
        cfg, state = self.config, self.state
        kinds = list(dict.fromkeys(_asked_kind(t) for _, t in state.landmarks))[:cfg.questions_per_direction]
        kinds = kinds or [GENERIC_LANDMARK]
        calls, keys = [], []
        for c in view.candidates:
            for kind in kinds:
                question = f"What {kind} can you see in the current direction {c.id}?"
                calls.append(("scene_observation", self._looking(question, view, c.view)))
                keys.append((c.id, question))
        tags = {c.id: [name for name, _ in view.objects[c.view].objects] for c in view.candidates} \
            if view.objects is not None else {}
        if view.objects is None:
            calls += [("object_detection", self._looking("Tag this image.", view, c.view)) for c in view.candidates]
        answers = self.ask(calls, json=False) if calls else []
        for c, answer in zip(view.candidates, answers[len(keys):], strict=False):  # vlm: the tagger's
            tags[c.id] = [t.strip() for t in answer.split("|") if t.strip()]
        scene, talk = {}, []
        for (cid, question), answer in zip(keys, answers, strict=False):
            talk.append({"direction": cid, "question": question, "answer": answer.strip()})
            scene[cid] = f"{scene.get(cid, '')} {answer.strip()}".strip()
        for cid, found in tags.items():
            scene[cid] = f"{scene.get(cid, '')} Objects: {' | '.join(found) or 'none'}.".strip()
        self.record["discussion"]["vision"] = {"questions": talk, "objects": tags,
                                               "objects_from": "semantic" if view.objects is not None else "model"}
        return scene

    def _looking(self, question: str, view: StepView, index: int) -> ChatMessage:
        """A question about view ``index``: with its image (vlm) or its object list (gt)."""
        if view.objects is not None:
            return ChatMessage.user(f"{question}\n\nWhat the camera sees in this direction (category, "
                                    f"distance): {view.objects[index].describe().split(': ', 1)[1]}")
        return ChatMessage.user(question, images=[view.panorama.rgb[index]])

    def estimate_completion(self, instruction: str) -> None:
        """Topic 3: summarize the last step, then estimate which actions are done."""
        state = self.state
        asked = "Can you summarize navigation trajectory based on the history?\n\nHistory:\n" + state.last_step
        (summary,) = self.ask([("trajectory_summary", asked)], json=False)
        state.trajectory.append(" ".join(summary.split()) or state.last_step)
        question = ("Can you estimate the completion of given instruction based on the navigation "
                    f"trajectory?\n\nInstruction: {instruction}\nActions:\n{_numbered(state.actions)}\n"
                    f"Landmarks: {_landmark_text(state.landmarks)}\nNavigation trajectory:\n"
                    + "\n".join(state.trajectory))
        (answer,) = self.ask([("completion_estimation", question)], json=True)
        parsed = _json(answer)
        if isinstance(parsed, dict):
            parts = {key: _items(answer, key) for key in ("executed", "in_progress", "waiting")}
            state.estimation = (f"Executed Actions: {'; '.join(parts['executed']) or 'none'}\n"
                                f"In-progress Actions: {'; '.join(parts['in_progress']) or 'none'}\n"
                                f"Actions Waiting to be Executed: {'; '.join(parts['waiting']) or 'none'}")
        else:
            state.estimation = answer.strip()
        self.record["discussion"]["completion"] = {
            "summary": {"question": asked.splitlines()[0], "answer": summary},
            "estimation": {"question": question.splitlines()[0], "answer": answer, "used": state.estimation}}

    def settle(self, decisions: list[Decision], view: StepView) -> Decision:
        """Topic 4: agreeing predictions are executed; disagreeing ones are fused by
        direction and the decision testing expert picks one (majority vote without it)."""
        talk = self.record["discussion"]
        talk["predictions"] = [{"thought": d.fields.get("thought", ""), "prediction": d.action} for d in decisions]
        counts = Counter(d.action for d in decisions)
        talk["fusion"] = len(counts) > 1 and self.config.decision_testing
        if not talk["fusion"]:
            return majority(decisions)
        groups: dict[str, list[str]] = {}
        for d in sorted(decisions, key=lambda d: -counts[d.action]):
            groups.setdefault(d.action, []).append(d.fields.get("thought", "").strip())
        fuse = ("Can you help me fuse the thoughts leading to the same movement direction? These thoughts are:\n"
                + "\n".join(f"- Prediction {action}: {t}" for action, ts in groups.items() for t in ts))
        (fusion,) = self.ask([("thought_fusion", fuse)], json=True)
        fused_map = _json(fusion)
        fused = {action: str(fused_map.get(action) or " / ".join(ts)) if isinstance(fused_map, dict)
                 else " / ".join(ts) for action, ts in groups.items()}
        pairs = "\n".join(f"({i}) Thought: {fused[a]} Prediction: {a}" for i, a in enumerate(groups, 1))
        scene = "\n".join(f"Direction {a}: {self.state.scene.get(a, '(not observed)')}" for a in groups if a != STOP)
        fields = {"thought": "compare the predictions against the environment", "action": "the final prediction"}
        test = (f"Can you help me make final decision? The thought-decision pairs are:\n{pairs}\n\n"
                f"Instruction: {view.instruction}\nCurrent environment:\n{scene or '(no scene information)'}\n\n"
                + output_format(self.config.prompt_variant, fields, list(groups)))
        (verdict,) = self.ask([("decision_testing", test)], json=self.config.prompt_variant == "json")
        talk["fused"] = [{"prediction": a, "thought": fused[a]} for a in groups]
        try:
            chosen = parse_reply(verdict, list(groups))
            talk["testing"] = {"question": test.splitlines()[0], "answer": verdict, "prediction": chosen.action}
            first = next(d for d in decisions if d.action == chosen.action)
            thought = chosen.fields.get("thought") or fused[chosen.action]
            return Decision(first.action, first.question, {**first.fields, "thought": thought})
        except ReplyError as exc:  # counted like any unusable reply; the majority decides instead
            self.state.trace.failures[exc.kind] += 1
            talk["testing"] = {"question": test.splitlines()[0], "answer": verdict, "error": exc.kind}
            return majority(decisions)

    # -- the navigator's prompt and memory ----------------------------------------------

    def build_prompt(self, view: StepView) -> Prompt:
        state, cfg = self.state, self.config
        prompt = Prompt()
        prompt.section("Instruction", instruction_text(view.instruction, state.leg, state.legs,
                                                       state.episode.subgoal_instructions))
        if state.analysed:
            prompt.section("Actions in the instruction (instruction analysis experts)", _numbered(state.actions))
            prompt.section("Landmarks", _landmark_text(state.landmarks))
        if cfg.completion_estimation:
            prompt.section("Your navigation trajectory (trajectory summary expert)",
                           "\n".join(state.trajectory) or "(this is the first step)")
            prompt.section("Estimation of executed actions (completion estimation expert)",
                           state.estimation or "No action has been executed yet.")
        else:
            prompt.section("Your last steps", history_text(state.history, cfg.history_window))
        if view.room_type is not None:
            prompt.section("Current room", view.room_type)
        notes = {cid: f"— {text}" for cid, text in state.scene.items()}
        prompt.section("Directions you can move to, with what the vision perception experts see there",
                       candidate_cards(view.candidates, notes=notes))
        if view.reference_image is not None:
            prompt.section("Goal picture", "STOP where you see this view.")
            prompt.image("goal", view.reference_image)
        if view.dialogue and cfg.ask_oracle:
            prompt.section("Dialogue with a guide who knows the house", dialogue_text(state.exchanges,
                                                                                      state.questions_left))
        return prompt

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        fields = {"thought": "your thought following procedures (1)-(5)", "action": "the direction id, or STOP"}
        if "ASK" in view.options:
            fields["question"] = "your question for the guide if the action is ASK, else empty"
        return fields

    def remember(self, view: StepView, decision: Decision | None) -> None:
        """Keep this step's observation and thought for the trajectory summary expert."""
        if decision is None:
            observed, thought, moved = "(undecided)", "", "a fallback move"
        else:
            observed = self.state.scene.get(decision.action, "")
            thought = decision.fields.get("thought", "")
            moved = "STOP" if decision.action == STOP else f"direction {decision.action}"
        self.state.last_step = (f"[Step {view.step}] Observation: {observed or '(not observed)'} "
                                f"Thought: {thought} Decision: {moved}")


def _json(text: str) -> Any:
    try:
        return extract_json(text)
    except LLMAnswerError:
        return None


def _items(text: str, key: str) -> list[str]:
    """The list ``key`` of a JSON answer, else the numbered / bulleted lines of the text."""
    value = _json(text)
    if isinstance(value, dict):
        found = value.get(key)
        if isinstance(found, list):
            return [str(v).strip() for v in found if str(v).strip()]
        return [found.strip()] if isinstance(found, str) and found.strip() else []
    return [m.group(1) for line in (text or "").splitlines() if (m := _NUMBERED.match(line.strip()))]


def _landmarks(text: str) -> list[tuple[str, str]]:
    """``(name, type)`` pairs from the landmark expert's JSON, else ``name (type)`` text."""
    value = _json(text)
    if isinstance(value, dict) and isinstance(value.get("landmarks"), list):
        pairs = []
        for item in value["landmarks"]:
            if isinstance(item, Mapping) and str(item.get("name", "")).strip():
                pairs.append((str(item["name"]).strip(), str(item.get("type", "object")).strip().lower()))
        return pairs
    tail = (text or "").split("Landmarks:", 1)[-1]
    pairs, start = [], 0
    for match in _PARENTHESIS.finditer(tail):
        before = tail[start:match.start()]
        name = before[max(before.rfind(c) for c in ",;:()\n") + 1:].strip()  # back to the last separator
        kind = match.group(1).split(",")[0].strip().lower()
        start = match.end()
        if name and kind:
            pairs.append((name, kind))
    return pairs


def _asked_kind(landmark_type: str) -> str:
    """How a landmark type is asked about: "color" → "color of objects" (§III-C)."""
    return "color of objects" if landmark_type in ("color", "colour") else landmark_type


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1)) or "(none)"


def _landmark_text(landmarks: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in landmarks) or "(none)"
