"""The Describer → Verifier → Synthesizer instruction pipeline (paper §3.3.2, Appendix C.2.2).

* **Describer** (a VLM): a caption of the target view (coarse) or an instruction written
  from frames along the path (fine).
* **Verifier**: fuses the caption with the prior by the paper's rule — visual priority for
  nuance, factual fallback to the scene-graph prior when the caption is uninformative.
* **Synthesizer**: style adaptation; strict JSON ``{"formal","natural","casual"}`` for
  coarse, ``{"natural"}`` for fine.

Every answer is checked: invalid JSON, missing keys, refusals, objects that are not in
the scene graph, a coarse answer that does not name the target by its scene-graph
identity (category or synonym as a noun-phrase head, no other colour: "the gray remote on
the TV stand" is not "the silver TV"), or a fine answer whose turns or landmark order
contradict the path (:mod:`vlnverse.tasks.grounding`) trigger a bounded retry (the
rejected answer and the reason are sent back to the model), then a fallback to the prior
text; provenance records which happened.

A Describer failure (no image model, no usable caption) costs only the Describer: the
Verifier fuses the prior with "Image is unclear." and the Synthesizer still runs. Without
images (no ``--render``) the Describer stage is not run at all, which ``vlnverse
datagen`` refuses unless asked for explicitly (see :mod:`vlnverse.tasks.datagen`).
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
from vlnverse.tasks.grounding import hallucinated_objects, is_refusal, route_problem, target_problem
from vlnverse.tasks.pathdesc import PathFacts
from vlnverse.tasks.promptset import PromptSet
from vlnverse.tasks.targets import TargetDescription

log = logging.getLogger(__name__)

DVS_VERSION = "2"
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

    def _describe(self, prompt: str, images: Sequence[np.ndarray], scene_id: str) -> str:
        """The Describer's caption, or :data:`UNCLEAR` when it has none to give (a refusal,
        an empty answer, a text-only model that rejects images): only this stage falls
        back, the Verifier and Synthesizer still run on the prior."""
        try:
            return self._ask(prompt, images, self._caption_check, json_answer=False)
        except (_Rejected, LLMError) as exc:
            log.info("%s: the describer gave no usable caption (%s); verifying the prior alone", scene_id, exc)
            return UNCLEAR

    def _json_check(self, keys: Sequence[str], categories: Sequence[str], problem=None):
        """A checker of JSON answers with string ``keys``; ``problem(text)`` names what is
        wrong with one answer's content (None when nothing is)."""
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
                why = problem(answer) if problem else None
                if why:
                    raise _Rejected(f"{key!r} {why}")
                out[key] = answer
            return out
        return check

    # -- coarse ------------------------------------------------------------------------
    def coarse(self, context: SceneContext, target: TargetDescription, prior: Instruction,
               variants: Sequence[str], image: np.ndarray | None) -> PipelineResult:
        """Instruction for a coarse trajectory (all three styles)."""
        categories = sorted({o.category for o in context.objects.values()})
        info = context.objects[target.object_id]

        def identity(answer: str) -> str | None:
            return target_problem(answer, info.category, info.color, categories)

        stages = ["prior"]
        caption = UNCLEAR
        try:
            if image is not None:
                stages.append("describer")
                prompt = self.prompts.render("describer_coarse", room=target.room, target=target.phrase,
                                             reference=target.reference_phrase or "nearby furniture")
                caption = self._describe(prompt, [image], context.scene_id)
            stages.append("verifier")
            texts = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(variants))
            prompt = self.prompts.render("verifier_coarse", count=len(variants), instructions_text=texts,
                                         image_caption=caption)
            verified = self._ask(prompt, [], self._json_check(["instruction"], categories, identity), json_answer=True)
            stages.append("synthesizer")
            prompt = self.prompts.render("synthesizer_coarse", instruction=verified["instruction"])
            styles = self._ask(prompt, [], self._json_check(list(STYLES), categories, identity), json_answer=True)
        except (_Rejected, LLMError) as exc:
            return self._fallback(prior, stages, f"{stages[-1]}: {exc}", caption)
        instruction = Instruction(text=styles[prior.style], style=prior.style, styles=styles,
                                  landmarks=prior.landmarks, rooms=prior.rooms)
        return PipelineResult(instruction, tuple(stages), self.source, None, caption)

    # -- fine --------------------------------------------------------------------------
    def fine(self, context: SceneContext, prior: Instruction, frames: Sequence[np.ndarray],
             facts: PathFacts | None = None) -> PipelineResult:
        """Instruction for a fine-grained trajectory (one natural style); with the path's
        ``facts``, answers must keep its turns and landmark order."""
        categories = sorted({o.category for o in context.objects.values()})
        route = None
        if facts is not None:
            turns = [leg.turn for leg in facts.legs]
            order = [context.objects[o].category for o in prior.landmarks if o in context.objects]

            def route(answer: str) -> str | None:
                return route_problem(answer, turns, order)

        stages = ["prior"]
        caption = UNCLEAR
        try:
            if frames:
                stages.append("describer")
                caption = self._describe(self.prompts.render("describer_fine"), list(frames), context.scene_id)
            stages.append("verifier")
            prompt = self.prompts.render("verifier_fine", instructions_text=prior.text, image_caption=caption)
            verified = self._ask(prompt, [], self._json_check(["instruction"], categories, route), json_answer=True)
            stages.append("synthesizer")
            prompt = self.prompts.render("synthesizer_fine", instruction=verified["instruction"])
            final = self._ask(prompt, [], self._json_check(["natural"], categories, route), json_answer=True)
        except (_Rejected, LLMError) as exc:
            return self._fallback(prior, stages, f"{stages[-1]}: {exc}", caption)
        instruction = Instruction(text=final["natural"], style="natural", landmarks=prior.landmarks, rooms=prior.rooms)
        return PipelineResult(instruction, tuple(stages), self.source, None, caption)

    def _fallback(self, prior: Instruction, stages: list[str], reason: str, caption: str) -> PipelineResult:
        log.info("falling back to the prior instruction: %s", reason)
        return PipelineResult(prior, tuple(stages), "prior", reason, caption)
