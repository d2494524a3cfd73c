"""The Describer → Verifier → Synthesizer instruction pipeline (paper §3.3.2, Appendix C.2.2).

* **Describer** (a VLM): a caption of the target view (coarse) or an instruction written
  from frames along the path (fine).
* **Verifier**: fuses the caption with the prior by the paper's rule — visual priority for
  nuance, factual fallback to the scene-graph prior when the caption is uninformative.
* **Synthesizer**: style adaptation; strict JSON ``{"formal","natural","casual"}`` for
  coarse, ``{"natural"}`` for fine.

Every answer is checked: invalid JSON, missing keys, refusals, or objects that are not in
the scene graph trigger a bounded retry (the rejected answer and the reason are sent back
to the model), then a fallback to the prior text; provenance records which happened.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, LLMAnswerError, LLMError
from vlnverse.llm import LLMClient, parse_json_answer
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.episode import STYLES, Instruction
from vlnverse.tasks.grounding import SYNONYMS, hallucinated_objects, is_refusal
from vlnverse.tasks.promptset import PromptSet
from vlnverse.tasks.targets import TargetDescription

log = logging.getLogger(__name__)

DVS_VERSION = "1"
UNCLEAR = "Image is unclear."


@dataclass(frozen=True)
class PipelineConfig:
    """LLM pipeline settings.

    Attributes:
        max_attempts: Answers asked per stage before falling back (>= 1).
        temperature: Sampling temperature of every call.
        max_tokens: Cap on generated tokens per call.
        seed: Sampling seed sent with every call.
        prompts_dir: Folder of prompt files overriding the defaults (None: defaults).
        verifier_variants: Rigid prior instructions shown to the coarse Verifier.
    """

    max_attempts: int = 3
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0
    prompts_dir: str | None = None
    verifier_variants: int = 10

    def __post_init__(self) -> None:
        if not (isinstance(self.max_attempts, int) and self.max_attempts >= 1):
            raise ConfigError(f"max_attempts must be an integer >= 1, got {self.max_attempts!r}")
        if not (isinstance(self.max_tokens, int) and self.max_tokens > 0):
            raise ConfigError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if not (isinstance(self.verifier_variants, int) and 1 <= self.verifier_variants <= 12):
            raise ConfigError(f"verifier_variants must be in [1, 12], got {self.verifier_variants!r}")


@dataclass(frozen=True)
class PipelineResult:
    """An instruction and how it was made.

    Attributes:
        instruction: The final instruction (the prior's on fallback).
        stages: Stages that ran, in order.
        source: ``"llm:<model>"``, or ``"prior"`` after a fallback.
        fallback: Why the prior was kept (None when the LLM text was used).
        caption: The Describer's caption (None when it did not run).
    """

    instruction: Instruction
    stages: tuple[str, ...]
    source: str
    fallback: str | None = None
    caption: str | None = None


def _mentions(text: str, noun: str) -> bool:
    """Whether ``text`` names ``noun`` or one of its synonyms."""
    words = {noun.lower()} | {a for a, c in SYNONYMS.items() if c == noun.lower()}
    if noun.lower() in SYNONYMS:
        words.add(SYNONYMS[noun.lower()])
    lowered = text.lower()
    return any(w in lowered for w in words)


class _Rejected(Exception):
    """An answer failed validation (the message says why)."""


class InstructionPipeline:
    """Runs the three agents over one trajectory at a time.

    Args:
        llm: The chat model (any :class:`~vlnverse.llm.LLMClient`).
        config: Pipeline settings.
        prompts: Prompt templates (default: loaded from ``config.prompts_dir``).
    """

    def __init__(self, llm: LLMClient, config: PipelineConfig | None = None, prompts: PromptSet | None = None) -> None:
        self.llm = llm
        self.config = config or PipelineConfig()
        self.prompts = prompts or PromptSet.load(self.config.prompts_dir)

    @property
    def source(self) -> str:
        return f"llm:{self.llm.model}"

    # -- calls -------------------------------------------------------------------------
    def _params(self) -> dict[str, Any]:
        c = self.config
        return {"temperature": c.temperature, "max_tokens": c.max_tokens, "seed": c.seed}

    def _ask(self, prompt: str, images: Sequence[np.ndarray], check, *, json_answer: bool) -> Any:
        """Ask until ``check(answer)`` accepts (returns the checked value) or attempts run out.

        Raises:
            _Rejected: every attempt was rejected (the last reason).
        """
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt, "images": list(images)}]
        reason = "no attempt"
        for _attempt in range(self.config.max_attempts):
            params = self._params()
            if json_answer:
                params["response_format"] = "json"
            try:
                text = self.llm.complete(messages, **params).text
            except LLMAnswerError as exc:
                raise _Rejected(f"unusable answer: {exc}") from exc
            try:
                return check(text)
            except _Rejected as exc:
                reason = str(exc)
                log.debug("rejected answer (%s): %.120s", reason, text)
                messages = messages[:1] + [
                    {"role": "assistant", "content": text or "(empty)"},
                    {"role": "user", "content": f"Your answer was rejected: {reason}. "
                                                "Answer again, following the instructions exactly."},
                ]
        raise _Rejected(reason)

    def _caption_check(self, text: str) -> str:
        if not text.strip():
            raise _Rejected("empty answer")
        if is_refusal(text):
            raise _Rejected("refusal")
        return text.strip()

    def _json_check(self, keys: Sequence[str], categories: Sequence[str], must_mention: str | None):
        def check(text: str) -> dict[str, str]:
            if is_refusal(text):
                raise _Rejected("refusal")
            try:
                value = parse_json_answer(text, expect=dict, required_keys=keys, string_keys=keys)
            except LLMAnswerError as exc:
                raise _Rejected(f"invalid JSON ({exc})") from None
            out = {}
            for key in keys:
                answer = " ".join(value[key].split())
                if not answer:
                    raise _Rejected(f"empty {key!r}")
                if is_refusal(answer):
                    raise _Rejected("refusal")
                extra = hallucinated_objects(answer, categories)
                if extra:
                    raise _Rejected(f"{key!r} names objects not in the scene: {', '.join(extra)}")
                if must_mention and not _mentions(answer, must_mention):
                    raise _Rejected(f"{key!r} does not mention the target ({must_mention})")
                out[key] = answer
            return out
        return check

    # -- coarse ------------------------------------------------------------------------
    def coarse(self, context: SceneContext, target: TargetDescription, prior: Instruction,
               variants: Sequence[str], image: np.ndarray | None) -> PipelineResult:
        """Instruction for a coarse trajectory (all three styles)."""
        categories = sorted({o.category for o in context.objects.values()})
        head = context.objects[target.object_id].category.split()[-1]
        stages = ["prior"]
        caption = UNCLEAR
        try:
            if image is not None:
                stages.append("describer")
                prompt = self.prompts.render("describer_coarse", room=target.room, target=target.phrase,
                                             reference=target.reference_phrase or "nearby furniture")
                try:
                    caption = self._ask(prompt, [image], self._caption_check, json_answer=False)
                except _Rejected as exc:
                    log.info("%s: describer gave no usable caption (%s); using the prior", context.scene_id, exc)
                    caption = UNCLEAR
            stages.append("verifier")
            texts = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(variants))
            prompt = self.prompts.render("verifier_coarse", count=len(variants), instructions_text=texts,
                                         image_caption=caption)
            verified = self._ask(prompt, [], self._json_check(["instruction"], categories, head), json_answer=True)
            stages.append("synthesizer")
            prompt = self.prompts.render("synthesizer_coarse", instruction=verified["instruction"])
            styles = self._ask(prompt, [], self._json_check(list(STYLES), categories, head), json_answer=True)
        except (_Rejected, LLMError) as exc:
            return self._fallback(prior, stages, f"{stages[-1]}: {exc}", caption)
        instruction = Instruction(text=styles[prior.style], style=prior.style, styles=styles,
                                  landmarks=prior.landmarks, rooms=prior.rooms)
        return PipelineResult(instruction, tuple(stages), self.source, None, caption)

    # -- fine --------------------------------------------------------------------------
    def fine(self, context: SceneContext, prior: Instruction, frames: Sequence[np.ndarray]) -> PipelineResult:
        """Instruction for a fine-grained trajectory (one natural style)."""
        categories = sorted({o.category for o in context.objects.values()})
        stages = ["prior"]
        caption = UNCLEAR
        try:
            if frames:
                stages.append("describer")
                try:
                    caption = self._ask(self.prompts.render("describer_fine"), list(frames), self._caption_check,
                                        json_answer=False)
                except _Rejected as exc:
                    log.info("%s: describer gave no usable description (%s)", context.scene_id, exc)
                    caption = UNCLEAR
            stages.append("verifier")
            prompt = self.prompts.render("verifier_fine", instructions_text=prior.text, image_caption=caption)
            verified = self._ask(prompt, [], self._json_check(["instruction"], categories, None), json_answer=True)
            stages.append("synthesizer")
            prompt = self.prompts.render("synthesizer_fine", instruction=verified["instruction"])
            final = self._ask(prompt, [], self._json_check(["natural"], categories, None), json_answer=True)
        except (_Rejected, LLMError) as exc:
            return self._fallback(prior, stages, f"{stages[-1]}: {exc}", caption)
        instruction = Instruction(text=final["natural"], style="natural", landmarks=prior.landmarks, rooms=prior.rooms)
        return PipelineResult(instruction, tuple(stages), self.source, None, caption)

    def _fallback(self, prior: Instruction, stages: list[str], reason: str, caption: str) -> PipelineResult:
        log.info("falling back to the prior instruction: %s", reason)
        return PipelineResult(prior, tuple(stages), "prior", reason, caption)
