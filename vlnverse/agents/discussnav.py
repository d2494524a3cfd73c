"""``discussnav``: DiscussNav (Long et al., "Discuss before moving"; ``papers/discussnav.txt``).

Before every move the navigator discusses with domain experts, each a prompted model role
(§III-B, Fig. 3), in the order of §III-C:

1. **Instruction analysis** (once per episode): the *action decomposition* expert breaks
   the instruction into actions; the *landmark extraction* expert first checks the action
   order against the sentence structure (and gives the corrected order), then lists the
   landmarks with their types.
2. **Vision perception** (every step, every direction: the panorama's views, 12 of 30° by
   default, as §IV-A): the *scene observation* expert is asked by landmark type ("What
   furniture can you see in direction 3 (left)?") and sees that view (``vlm``) or its
   semantic-sensor object list (``gt``); the *object detection* expert tags the view (a VLM
   asked for tags, standing in for RAM), or in ``gt`` mode the semantic sensor gives the tags
   without a model call. The navigator then chooses one of the candidate places, each named
   with the direction it lies in (the paper moves to the first viewpoint of the chosen
   direction).
3. **Completion estimation** (every step after the first): the *trajectory summary* expert
   condenses the last step to ``[Step t] Observation: … Thought: …``; the *completion
   estimation* expert reads the actions, landmarks and trajectory and answers which actions
   are executed, in progress and waiting. Its answer goes into the navigator's prompt.
4. **Movement decision**: the navigator (Fig. 2's prompt) makes ``samples`` = N predictions
   (default 5 at temperature 1), each a thought and a prediction, in one request with ``n``
   where the server honours it, else concurrently. If they agree the agent moves. Its reply
   budget (``max_reply_tokens``, 1500) leaves room for five detailed reasoning points; a
   reply cut at the budget counts in the trace's ``truncations``.
5. **Decision testing** (only when they disagree): the *thought fusion* expert fuses the
   thoughts leading to the same direction; the *decision testing* expert (temperature 0)
   weighs the fused thought-prediction pairs against the scene and picks one of them.

Experts answer at ``expert_temperature`` (0) with one output. Each group can be switched
off (Table II's ablations), and ``samples: 1`` ablates the N predictions. A direction is a
candidate waypoint (its letter id); moving to it drives to that candidate. Each step's
trace has a ``discussion`` record (every expert's question and answer, the predictions,
whether fusion ran, the decision); tokens are counted per expert role. Every prompt says
the paper's instructions in our own words.

Within the model's context window (:mod:`vlnverse.agents.fitting`): what each expert adds to
later prompts is capped — a vision answer or a direction's tags at ``perception_tokens`` (the
paper's are a sentence or a few tags), the actions, landmarks, step summaries, estimate and
thoughts at ``answer_tokens``; a prompt still too long loses its oldest trajectory steps
first, then the ends of the per-direction scene lines; the instruction and the places are
never cut.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.agents.base import EpisodeState, LLMWaypointAgent, StepView, majority
from vlnverse.agents.config import LLMAgentConfig, _positive
from vlnverse.agents.fitting import reserve_for
from vlnverse.agents.panorama import direction_phrase
from vlnverse.agents.parsing import Decision, ReplyError, parse_reply
from vlnverse.agents.prompts import (
    ASK,
    STOP,
    Prompt,
    candidate_cards,
    dialogue_text,
    history_text,
    output_format,
)
from vlnverse.agents.trace import TOO_LONG
from vlnverse.errors import ConfigError, LLMAnswerError
from vlnverse.eval.agent import EpisodeInfo
from vlnverse.llm.context import clip, repair_echo
from vlnverse.llm.jsonanswer import extract_json
from vlnverse.llm.types import ChatMessage

NAVIGATOR_PROMPT = """\
You guide a robot through a house by following a route instruction, using as few moves as you
can. Before this move you consulted a panel of specialists: they worked out the route's landmarks,
condensed the trajectory so far and judged which parts of the instruction are already done, and
the vision specialists described what lies in every direction around you. Decide which place to
move to now, using what the panel reported. Prefer places you have not been to; return to a
visited place only when there is good reason. If a landmark stays out of sight or an action cannot
be carried out, consider moving on to the next action and looking for its landmark.
Reply with a "thought" and an "action". Reason thoroughly in the thought, point by point:
(1) Is the panel's estimate of the finished actions consistent with your trajectory?
(2) Compare what you see now with the landmark of the latest action: is that action finished?
(3) Which action are you carrying out now, and which landmark are you heading for?
(4) Which direction around you serves that action best, and why?
(5) Your move, as it follows from the points above.
The action is the id of one place and nothing else; answer STOP once you believe you are at the
destination. Choose with care: a wrong move is costly."""

EXPERTS = {
    "action_decomposition": (
        "You split route instructions into steps. Find every action the instruction asks for and keep "
        "each one whole. "
        'Reply with one JSON object: {"actions": ["<action 1>", "<action 2>", ...]}, listed in the order '
        "they must be carried out."),
    "landmark_extraction": (
        "You find the landmarks of route instructions. First read the sentence structure to check that "
        "the listed actions are in the right order (in \"stop just past the chart\" the passing comes "
        "before the stopping) and give the corrected order when they are not. Then name each landmark "
        "with its kind (room, furniture, infrastructure, decoration, appliance, color, ...), keeping every "
        "landmark whole (\"the chart on the wall\", not \"chart\" and \"wall\"). Reply with one JSON object: "
        '{"order_correct": true or false, "actions": ["<the actions in the right order>"], '
        '"landmarks": [{"name": "<landmark>", "type": "<kind>"}]}.'),
    "scene_observation": (
        "You describe scenes. Answer the question about the view you are given, with every useful "
        "detail, and about nothing it does not ask."),
    "object_detection": (
        "You tag images (an image tagging model). Give each object visible in the image as a short "
        "tag, the tags separated by ' | ', and nothing else."),
    "trajectory_summary": (
        "You shorten navigation records. Rewrite the step you are given briefly: drop repeated or "
        "unimportant objects from the observation and reasoning that does not bear on the route. "
        "Use the form: [Step t] Observation: ... Thought: ..."),
    "completion_estimation": (
        "You judge progress along a route. From the trajectory so far and the landmarks, decide which "
        "actions of the instruction are done. Reason first: (1) which landmarks the trajectory has "
        "passed, (2) how the heading changed at each move, (3) which actions are therefore done. "
        'Reply with one JSON object: {"thought": "...", "executed": ["<action>", ...], '
        '"in_progress": ["<action>", ...], "waiting": ["<action>", ...]}.'),
    "thought_fusion": (
        "You merge reasoning. Combine the lines of reasoning that end in the same move into one, "
        "keeping what matters about the actions, the landmarks and the changes of direction. "
        'Reply with one JSON object mapping each prediction to its merged reasoning: '
        '{"<prediction>": "<merged reasoning>", ...}.'),
    "decision_testing": (
        "You check proposed moves. Judge for each proposal, from its reasoning and from what surrounds "
        "the robot now, whether it holds up; then choose the most reliable one as the final move."),
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
    plus the discussion's. ``max_reply_tokens`` defaults to 1500: the navigator reasons
    through five points before its prediction.

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
        perception_tokens: The most (estimated) tokens one vision answer (one direction,
            one question) or one direction's object tags adds to the navigator's prompt.
    """

    samples: int = 5
    temperature: float = 1.0
    max_reply_tokens: int = 1500
    local_map: bool = False
    ask_oracle: bool = False
    instruction_analysis: bool = True
    vision_perception: bool = True
    completion_estimation: bool = True
    decision_testing: bool = True
    expert_temperature: float = 0.0
    questions_per_direction: int = 2
    expert_workers: int = 4
    perception_tokens: int = 60

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= float(self.expert_temperature) <= 2.0:
            raise ConfigError(f"expert_temperature must be in [0, 2], got {self.expert_temperature!r}")
        for name in ("questions_per_direction", "expert_workers", "perception_tokens"):
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
    scene: dict[int, str] = field(default_factory=dict)


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

    def ask(self, calls: Sequence[tuple[str, str | ChatMessage | Prompt]], json: bool) -> list[str]:
        """The experts' answers to ``(role, question)`` calls, made concurrently (a
        :class:`Prompt` question is fitted to the context window first)."""
        cfg = self.config
        messages = [self.fitted(question, EXPERTS[role], role).messages if isinstance(question, Prompt) else
                    [ChatMessage.system(EXPERTS[role]),
                     question if isinstance(question, ChatMessage) else ChatMessage.user(question)]
                    for role, question in calls]
        responses = self.consult_many(list(zip(messages, (role for role, _ in calls), strict=True)),
                                      workers=cfg.expert_workers, temperature=cfg.expert_temperature, n=1,
                                      response_format="json" if json else "text")
        return [r.text for r in responses]

    def analyse_instruction(self, instruction: str) -> None:
        """Topic 1: actions, then landmarks with the action-order check."""
        state = self.state
        asked = f'Split this instruction into its actions: "{instruction}"'
        (answer,) = self.ask([("action_decomposition", asked)], json=True)
        actions = self.capped_items(_items(answer, "actions"))
        question = (f'Which landmarks does this instruction mention: "{instruction}"?\n\n'
                    "Its actions, as split so far:\n" + _numbered(actions))
        (reply,) = self.ask([("landmark_extraction", question)], json=True)
        checked = _json(reply)
        corrected = self.capped_items(_items(reply, "actions")) if isinstance(checked, dict) else []
        order_correct = not (isinstance(checked, dict) and checked.get("order_correct") is False and corrected)
        state.actions = actions if order_correct else corrected
        landmarks = _landmarks(reply)
        names = self.capped_items([name for name, _ in landmarks])
        state.landmarks = [(name, clip(kind, 8)) for name, (_, kind) in zip(names, landmarks, strict=False)]
        state.analysed = True
        self.record["discussion"]["instruction_analysis"] = {
            "decomposition": {"question": asked, "answer": answer, "actions": actions},
            "landmarks": {"question": question.splitlines()[0], "answer": reply,
                          "order_correct": order_correct, "actions": state.actions,
                          "landmarks": [{"name": n, "type": t} for n, t in state.landmarks]}}

    def perceive(self, view: StepView) -> dict[int, str]:
        """Topic 2: in every direction (panorama view), the scene observation expert by
        landmark type and the object tags; returns each direction's scene text."""
        cfg, state = self.config, self.state
        kinds = list(dict.fromkeys(_asked_kind(t) for _, t in state.landmarks))[:cfg.questions_per_direction]
        kinds = kinds or [GENERIC_LANDMARK]
        directions = range(view.panorama.config.views)
        calls, keys = [], []
        for d in directions:
            for kind in kinds:
                question = f"What {kind} can you see in direction {d} ({_direction(view, d)})?"
                calls.append(("scene_observation", self._looking(question, view, d)))
                keys.append((d, question))
        tags = {d: [name for name, _ in view.objects[d].objects] for d in directions} \
            if view.objects is not None else {}
        if view.objects is None:
            calls += [("object_detection", self._looking("Tag this image.", view, d)) for d in directions]
        answers = self.ask(calls, json=False) if calls else []
        for d, answer in zip(directions, answers[len(keys):], strict=False):  # vlm: the tagger's
            tags[d] = self.capped_items([t.strip() for t in answer.split("|") if t.strip()], cfg.perception_tokens)
        scene, talk = {}, []
        for (d, question), answer in zip(keys, answers, strict=False):
            talk.append({"direction": d, "question": question, "answer": answer.strip()})
            scene[d] = f"{scene.get(d, '')} {self.capped(answer.strip(), cfg.perception_tokens)}".strip()
        for d, found in tags.items():
            scene[d] = f"{scene.get(d, '')} Objects: {' | '.join(found) or 'none'}.".strip()
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
        asked = "Condense this step of the route record.\n\nStep:\n" + state.last_step
        (summary,) = self.ask([("trajectory_summary", asked)], json=False)
        state.trajectory.append(self.capped(" ".join(summary.split()) or state.last_step))
        question = Prompt([("text", "Which actions of the instruction are done, given the trajectory?")])
        question.section("Instruction", instruction)
        question.section("Actions", _numbered(state.actions))
        question.section("Landmarks", _landmark_text(state.landmarks))
        question.section("Navigation trajectory", "\n".join(state.trajectory), cut="oldest")
        (answer,) = self.ask([("completion_estimation", question)], json=True)
        parsed = _json(answer)
        if isinstance(parsed, dict):
            parts = {key: _items(answer, key) for key in ("executed", "in_progress", "waiting")}
            state.estimation = self.capped(f"Executed Actions: {'; '.join(parts['executed']) or 'none'}\n"
                                           f"In-progress Actions: {'; '.join(parts['in_progress']) or 'none'}\n"
                                           f"Actions Waiting to be Executed: {'; '.join(parts['waiting']) or 'none'}")
        else:
            state.estimation = self.capped(answer.strip())
        self.record["discussion"]["completion"] = {
            "summary": {"question": asked.splitlines()[0], "answer": summary},
            "estimation": {"question": question.parts[0][1], "answer": answer, "used": state.estimation}}

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
            groups.setdefault(d.action, []).append(self.capped(d.fields.get("thought", "").strip()))
        fuse = Prompt([("text", "Merge the reasoning behind each proposed move.")])
        fuse.section("The reasoning, by move", "\n".join(f"- Prediction {action}: {t}" for action, ts in groups.items()
                                                         for t in ts), cut="shorten")
        (fusion,) = self.ask([("thought_fusion", fuse)], json=True)
        fused_map = _json(fusion)
        fused = {action: self.capped(str(fused_map.get(action) or " / ".join(ts))) if isinstance(fused_map, dict)
                 else " / ".join(ts) for action, ts in groups.items()}
        pairs = "\n".join(f"({i}) Thought: {fused[a]} Prediction: {a}" for i, a in enumerate(groups, 1))
        scene = "\n".join(f"Place {a}: {self._scene_of(view, a)}" for a in groups if a != STOP)
        fields = {"thought": "compare the predictions against the environment", "action": "the final prediction"}
        test = Prompt([("text", "Choose the final move.")])
        test.section("The proposed moves with their reasoning", pairs, cut="shorten")
        test.section("Instruction", view.instruction)
        test.section("Current environment", scene or "(no scene information)", cut="shorten")
        test.section("Reply format", output_format(self.config.prompt_variant, fields, list(groups)))
        system = EXPERTS["decision_testing"]
        messages = self.fitted(test, system, "decision_testing").messages
        response = self.consult(messages, "decision_testing", temperature=self.config.expert_temperature,
                                response_format="json" if self.config.prompt_variant == "json" else "text")
        verdict = response.text
        talk["fused"] = [{"prediction": a, "thought": fused[a]} for a in groups]
        for attempt in range(2):
            if response.finish_reason == TOO_LONG:  # counted; a repair would be longer still
                return majority(decisions)
            try:
                chosen = parse_reply(verdict, list(groups))
            except ReplyError as exc:  # counted like any unusable reply: one repair, then the majority decides
                self.state.trace.failures[exc.kind] += 1
                talk["testing"] = {"question": test.parts[0][1], "answer": verdict, "error": exc.kind}
                if attempt:
                    return majority(decisions)
                self.state.trace.repairs += 1
                turns = [ChatMessage.assistant(repair_echo(verdict)), ChatMessage.user(
                    f"Your reply could not be used ({exc}). " + output_format(self.config.prompt_variant, fields,
                                                                                list(groups)))]
                messages = self.fitted(test, system, "decision_testing", reserve=reserve_for(turns)).messages
                response = self.consult([*messages, *turns], "decision_testing",
                                        temperature=self.config.expert_temperature,
                                        response_format="json" if self.config.prompt_variant == "json" else "text")
                verdict = response.text
                continue
            talk["testing"] = {"question": test.parts[0][1], "answer": verdict, "prediction": chosen.action}
            first = next(d for d in decisions if d.action == chosen.action)
            thought = chosen.fields.get("thought") or fused[chosen.action]
            return Decision(first.action, first.question, {**first.fields, "thought": thought})
        return majority(decisions)  # not reached: the second attempt returns

    # -- the navigator's prompt and memory ----------------------------------------------

    def build_prompt(self, view: StepView) -> Prompt:
        state, cfg = self.state, self.config
        prompt = Prompt()
        prompt.section("Instruction", state.instruction(view.instruction))
        if state.analysed:
            prompt.section("Actions in the instruction (instruction analysis experts)", _numbered(state.actions))
            prompt.section("Landmarks", _landmark_text(state.landmarks))
        if cfg.completion_estimation:
            prompt.section("Your navigation trajectory (trajectory summary expert)",
                           "\n".join(state.trajectory) or "(this is the first step)", cut="oldest")
            prompt.section("Estimation of executed actions (completion estimation expert)",
                           state.estimation or "No action has been executed yet.", cut="shorten")
        else:
            prompt.section("Your last steps", history_text(state.history, cfg.history_window), cut="oldest")
        if view.room_type is not None:
            prompt.section("Current room", view.room_type)
        if state.scene:
            places = {}
            for c in view.candidates:
                places.setdefault(c.view, []).append(c.id)
            prompt.section("What the vision experts see in each direction", "\n".join(
                f"direction {d} ({_direction(view, d)}; places here: {', '.join(places.get(d, [])) or 'none'}): {text}"
                for d, text in sorted(state.scene.items())), cut="shorten")
        prompt.section("Places you can move to (view = the direction it lies in)", candidate_cards(view.candidates))
        if view.reference_image is not None:
            prompt.section("Goal picture", "STOP where you see this view.")
            prompt.image("goal", view.reference_image)
        if view.dialogue and cfg.ask_oracle:
            prompt.section("Dialogue with a guide who knows the house", dialogue_text(
                state.exchanges, state.questions_left if ASK in view.options else 0), cut="oldest")
        return prompt

    def _scene_of(self, view: StepView, action: str) -> str:
        """What the vision experts saw in the direction of candidate ``action``."""
        chosen = next((c for c in view.candidates if c.id == action), None)
        return self.state.scene.get(chosen.view, "") if chosen is not None else ""

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        fields = {"thought": "your reasoning through points (1)-(5)", "action": "the place id, or STOP"}
        if "ASK" in view.options:
            fields["question"] = "your question for the guide if the action is ASK, else empty"
        return fields

    def remember(self, view: StepView, decision: Decision | None) -> None:
        """Keep this step's observation and thought for the trajectory summary expert."""
        if decision is None:
            observed, thought, moved = "(undecided)", "", "a fallback move"
        else:
            observed = self._scene_of(view, decision.action)
            thought = self.capped(decision.fields.get("thought", ""))
            moved = "STOP" if decision.action == STOP else f"direction {decision.action}"
        self.state.last_step = (f"[Step {view.step}] Observation: {observed or '(not observed)'} "
                                f"Thought: {thought} Decision: {moved}")


def _direction(view: StepView, index: int) -> str:
    """Direction ``index`` (a panorama view) in words: ``"left"``."""
    return direction_phrase(math.radians(index * view.panorama.config.step_deg))


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
