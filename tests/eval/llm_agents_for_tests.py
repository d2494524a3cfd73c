"""A small LLM-driven agent for the eval-integration tests (the real agents live in
``vlnverse.agents``): one discrete action per model call, asked as JSON, with one repair
prompt and a counted fallback, and a trace in the agents' format."""

from __future__ import annotations

from dataclasses import dataclass

from vlnverse.errors import LLMAnswerError, LLMRequestError
from vlnverse.eval.agent import Agent, Ask

ACTIONS = {"stop": 0, "forward": 1, "left": 2, "right": 3}
FALLBACK = "forward"


@dataclass(frozen=True)
class ChatStepConfig:
    """Settings of :class:`ChatStepAgent`.

    Attributes:
        max_tokens_per_episode: the per-episode token cap (None: none).
        max_usd_per_episode: the per-episode USD cap (None: none).
        ask_first: dialogue episodes: ask the oracle once before moving.
        waypoints: trace the decision poses as ``waypoints``.
        broken_trace: trace a malformed ``debate`` (the harness must fail the episode only).
    """

    max_tokens_per_episode: int | None = None
    max_usd_per_episode: float | None = None
    ask_first: bool = True
    waypoints: bool = False
    broken_trace: bool = False


class ChatStepAgent(Agent):
    """Asks the model ``{"action": "forward|left|right|stop"}`` every step."""

    config_class = ChatStepConfig
    action_space = "discrete"
    sensors = ()

    def __init__(self, config: ChatStepConfig, *, llm=None) -> None:
        self.config = config
        self.llm = llm

    def reset(self, episode) -> None:
        self.episode = episode
        self.steps: list[dict] = []
        self.fallbacks = self.repairs = self.parse_failures = 0
        self.asked = False
        self.answers: list[str] = []
        self.saw_reference = False
        self.poses: list[list[float]] = []

    def act(self, observation):
        if "oracle_answer" in observation and observation["oracle_answer"]:
            self.answers.append(str(observation["oracle_answer"]))
        self.saw_reference = self.saw_reference or "reference_image" in observation
        self.poses.append([float(v) for v in observation["pose"][:2]])
        if self.episode.task == "dialogue" and self.config.ask_first and not self.asked:
            self.asked = True
            return Ask("Which way should I go?")
        prompt = (f"Instruction: {self.episode.instruction}\nStep {len(self.steps)}.\n"
                  'Answer with JSON {"action": "forward|left|right|stop"}.')
        messages = [{"role": "user", "content": prompt}]
        step = {"step": len(self.steps), "candidates": [], "messages": [prompt], "fallback": False,
                "repair": False}
        action = self._ask_model(messages, step)
        step["action"] = action
        self.steps.append(step)
        return ACTIONS[action]

    def _ask_model(self, messages, step) -> str:
        for attempt in range(2):
            try:
                response = self.llm.complete(messages, response_format="json", max_tokens=32)
            except LLMRequestError:
                break
            step["reply"] = response.text
            try:
                from vlnverse.llm import parse_json_answer

                value = parse_json_answer(response.text, required_keys=["action"])
                if value["action"] in ACTIONS:
                    step["parsed"] = value
                    return value["action"]
            except LLMAnswerError:
                pass
            self.parse_failures += 1
            if attempt == 0:
                self.repairs += 1
                step["repair"] = True
                messages = [*messages, {"role": "assistant", "content": response.text},
                            {"role": "user", "content": "That is not one of the actions. Answer with JSON "
                                                        '{"action": "forward|left|right|stop"} only.'}]
        self.fallbacks += 1
        step["fallback"] = True
        return FALLBACK

    def trace(self):
        trace = {"steps": self.steps, "fallbacks": self.fallbacks, "repairs": self.repairs,
                 "parse_failures": self.parse_failures, "answers": self.answers,
                 "saw_reference": self.saw_reference}
        if self.config.waypoints:
            trace["waypoints"] = self.poses
        if self.config.broken_trace:
            trace["debate"] = [{"rounds": [[1, 2, 3]]}]
        return trace
