"""``text_history``: a NavGPT-style agent whose memory is a running text summary.

After each step the model rewrites a short summary of its progress (what it has done,
seen and which part of the instruction is complete); the next prompt shows that summary,
the last steps, what the agent perceives now and the candidate places (Zhou et al.,
NavGPT; VLNVerse §5.3). ``text_history_cot`` asks for an explicit ``thought`` first.
"""

from __future__ import annotations

from collections.abc import Mapping

from vlnverse.agents.base import LLMWaypointAgent, StepView
from vlnverse.agents.parsing import Decision
from vlnverse.agents.prompts import Prompt, history_text

SYSTEM_PROMPT = """\
You are a robot navigating an indoor home by following a person's instruction.
At each step you are told the instruction, a summary of your progress so far, your last
steps, what you perceive now and the candidate places you can move to (each with a
letter id, a direction relative to where you face and a distance).
Choose one candidate id to move there, STOP when you are at the place the instruction
describes, or ASK the guide a question when that option is offered.
Then rewrite the summary: what you have done and seen, and which parts of the
instruction are complete."""

SUMMARY_FIELD = ("summary", "your updated summary of the progress, at most three sentences")


class TextHistoryAgent(LLMWaypointAgent):
    """NavGPT-style text-history agent (see the module docs)."""

    name = "text_history"
    system_prompt = SYSTEM_PROMPT

    def build_prompt(self, view: StepView) -> Prompt:
        state = self.state
        prompt = Prompt()
        prompt.section("Instruction", state.instruction(view.instruction))
        prompt.section("Summary of your progress", state.memory or "You have just started.", cut="shorten")
        prompt.section("Your last steps", history_text(state.history, self.config.history_window), cut="oldest")
        self.observation_sections(prompt, view)
        return prompt

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        return self.common_fields(view, SUMMARY_FIELD)

    def remember(self, view: StepView, decision: Decision | None) -> None:
        if decision is not None and decision.fields.get("summary", "").strip():
            self.state.memory = self.capped(decision.fields["summary"].strip())


class TextHistoryCoTAgent(TextHistoryAgent):
    """``text_history`` with an explicit reasoning field before the action."""

    name = "text_history_cot"
    cot = True
