"""``dscd_nav``: Dual-Stance Cooperative Debate navigation (An et al., DSCD-Nav, 2026).

One decision step follows the paper's Algorithm 1:

1. **Candidate cards** ``C_t = Phi(A_t)`` (§3.1, Eq. 2): the candidate generator's
   waypoints (by default geometry-aware, r in the paper's [0.4, 1.5] m: :class:`DSCDNavConfig`), each shown with its id, forward distance ``r``, yaw ``theta`` and direction
   text, without re-scoring. ``X_t = (g, C_t, E_t)``: the goal text, the cards and weak
   evidence (the last steps; room and visible objects in ``gt`` perception).
2. **Debate** (§3.2): up to ``rounds`` (K, default 3) rounds, stopping early on agreement.
   TSU (task–scene understanding: goal progress, layout, room–object commonsense) proposes
   ``(id, why, evidence)`` (Eq. 5); SIB (safety–information balancing, task-agnostic: it is
   told neither the goal nor the goal picture nor the dialogue) agrees or counters with an
   alternative (Eq. 6); its declared ``agree`` is the consensus (Alg. 1 l. 10). Each reads the
   other's previous arguments. ``schedule: alternating`` is Algorithm 1 (SIB audits TSU's
   proposal of the same round); ``simultaneous`` reads Eqs. 3–4 literally: from round 2
   each stance reads only the previous round, so the two calls are sent concurrently.
3. **NCA arbitration** (§3.3.1, Eq. 10) over the cards and the debate trace →
   ``(id*, why*, evidence*)``. A judge with no usable reply (after its repair prompt)
   leaves the debate's consensus, else TSU's final preference.
4. **Two-mode execution** (§3.3, Eqs. 8–13): Mode A executes ``(r*, theta*)``. Mode B, when
   the final round disagrees and ``|dtheta| <= alpha`` with ``dtheta = wrap(theta_alt -
   theta*)``: the micro-probe ``(beta_r r*, theta* + beta_theta dtheta)`` (:func:`soft_compromise`);
   the next step debates again on the new observation. ``theta_alt`` is the final
   preference of the stance NCA did not follow (TSU's when NCA chose neither). The
   comparison with alpha allows float error (candidates lie on a grid), and the probe is
   clipped to the free space seen along its heading (recorded as ``probe.clipped``).
5. **Stop verification** (Appendix A.2, ``stop_check``): ``evidence`` (default) puts the
   detections of the goal category in the goal-aware prompts (the paper's GroundingDINO
   evidence; here the semantic sensor in ``gt`` perception, nothing extra in ``vlm``);
   ``veto`` (ObjectNav only) additionally executes STOP only when the target is confirmed
   within the episode's success radius plus ``veto_margin`` (semantic sensor) or by a VLM
   check, moving to the stances' last non-STOP preference otherwise; ``off``: neither.

Ablations (Table 3): ``rounds``; ``tsu_only`` / ``sib_only`` (one stance decides alone);
``nca: false`` (no judge: the agreed id, else TSU's final preference); ``micro_probing:
false``; ``perception: vlm|gt``. The trace's ``debate`` (one entry per step: rounds,
judge, override, consensus, mode, probe, stop verification) and ``debate_max_rounds``
give DR, JOR and MPTR (:mod:`vlnverse.eval.scoring.trace_metrics`); AORI comes from the recorded path.

Within the model's context window (:mod:`vlnverse.agents.fitting`): each stance's ``why`` and
``evidence`` are capped (``answer_tokens``) before the other stance and the judge read them;
a prompt still too long loses its oldest steps and debate rounds first, then the ends of
the scene lines; the goal and the cards are never cut.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from vlnverse.agents.base import LLMWaypointAgent, StepView
from vlnverse.agents.config import LLMAgentConfig, WaypointConfig, _positive
from vlnverse.agents.fitting import reserve_for
from vlnverse.agents.panorama import direction_phrase
from vlnverse.agents.parsing import Decision, ReplyError, parse_reply, reply_fields
from vlnverse.agents.prompts import ASK, STOP, Prompt, history_text, output_format
from vlnverse.agents.trace import TOO_LONG
from vlnverse.agents.waypoints.depth import DepthWaypoints
from vlnverse.errors import ConfigError
from vlnverse.llm.context import repair_echo
from vlnverse.llm.types import ChatMessage
from vlnverse.sim.types import wrap_angle

SCHEDULES = ("alternating", "simultaneous")
STOP_CHECKS = ("evidence", "veto", "off")
AFFIRMATIVE = ("yes", "true")  # a JSON boolean arrives as "True"
OBJECTNAV = "objectnav"
ANGLE_TOLERANCE = 1e-6  # radians: headings on a grid differ from the threshold by float error only

TSU_SYSTEM = """\
You are the Task-Scene Understanding (TSU) agent of a robot searching an indoor home.
Your stance is goal progress: treat the goal as the primary constraint and use what is
visible, the room layout and commonsense about which objects are found in which rooms
to choose the candidate most likely to lead to the goal. STOP only when the goal is
clearly in view and close. You debate with a safety-information agent (SIB): read its
previous arguments, keep your proposal or revise it when its evidence is convincing.
Answer with one candidate id, a concise why, and the evidence you rely on."""

SIB_SYSTEM = """\
You are the Safety-Information Balancing (SIB) agent of a robot moving in an indoor home.
Your stance is task-agnostic: you are not told the goal and do not reason about it.
Audit the proposed candidate for collision risk, uncertain narrow passages, poor
visibility and premature commitment to one direction. Agree when it is safe and keeps
the view informative; otherwise counter with a safer or more informative candidate.
Read the proposer's previous arguments. Answer agree or counter, the candidate id you
prefer (the proposed one when you agree), a concise why and your evidence."""

NCA_SYSTEM = """\
You are the Navigation Consensus Arbitration (NCA) agent of a robot searching an indoor
home. Two agents debated the next move: TSU argues for goal progress, SIB for safety
and information value. Weigh both sides' reasons and evidence under one set of criteria
(task progress, safety, information gain) and decide the action. Do not simply pick a
winner: choose the best-justified candidate. STOP only when the goal is in view and close.
Answer with the action, a concise why and the evidence distilled from both sides."""

VERIFY_SYSTEM = """\
You verify a robot's decision to stop. Answer only from what is visible now."""


def soft_compromise(r_star: float, theta_star: float, theta_alt: float, beta_r: float,
                    beta_theta: float) -> tuple[float, float, float]:
    """Mode B's micro-probe (Eq. 13): ``(beta_r r*, theta* + beta_theta dtheta, dtheta)``
    with ``dtheta = wrap(theta_alt - theta*)`` (radians)."""
    delta = wrap_angle(theta_alt - theta_star)
    return beta_r * r_star, wrap_angle(theta_star + beta_theta * delta), delta


PAPER_RANGE_M = (0.4, 1.5)
"""The paper's forward distances r of its candidates (§4 implementation details, Eq. 1)."""


@dataclass(frozen=True)
class DSCDWaypointConfig(WaypointConfig):
    """DSCD-Nav's candidates: geometry-aware, r in the paper's [0.4, 1.5] m (other fields
    as :class:`~vlnverse.agents.config.WaypointConfig`; a partial ``waypoints:`` mapping
    keeps this range)."""

    min_distance: float = PAPER_RANGE_M[0]
    max_distance: float = PAPER_RANGE_M[1]


@dataclass(frozen=True)
class DSCDNavConfig(LLMAgentConfig):
    """``dscd_nav`` settings: the shared ones plus the paper's (Appendix A.2).

    DSCD-Nav debates over "geometry-aware" candidates with r in [0.4, 1.5] m (Eq. 1): by
    default the embodiment-aware depth predictor in that range (``waypoint_predictor:
    depth``, ``waypoints`` a :class:`DSCDWaypointConfig`); ``waypoint_predictor: learned``
    hands it the benchmark's learned waypoints instead, as the NavGPT/MapGPT agents use.

    Attributes:
        rounds: Most debate rounds K (early stop on agreement).
        schedule: ``alternating`` (Algorithm 1) or ``simultaneous`` (Eqs. 3–4, concurrent calls).
        tsu_only: Ablation: TSU decides alone (no debate, no judge).
        sib_only: Ablation: SIB decides alone.
        nca: Arbitrate with NCA (off: the agreed id, else TSU's final preference).
        micro_probing: Allow Mode B.
        alpha_deg: Compromise threshold alpha on ``|dtheta|`` (degrees).
        beta_r: Forward scale of the micro-probe.
        beta_theta: Yaw interpolation of the micro-probe toward the alternative.
        clip_probe: Shorten a micro-probe to the free space the depth shows along its heading
            (off: Eq. 13 as written, which may drive into a wall under Strict).
        stop_check: ``evidence`` (detections of the goal category in the prompt), ``veto``
            (evidence, and on ObjectNav a STOP needs the target confirmed) or ``off``.
        veto_margin: ``veto`` in ``gt`` perception: the category must be seen within the
            episode's success radius plus this (m; an ObjectNav viewpoint lies up to 1 m
            from its object).
    """

    waypoint_predictor: str = "depth"
    waypoints: DSCDWaypointConfig = field(default_factory=DSCDWaypointConfig)
    rounds: int = 3
    schedule: str = "alternating"
    tsu_only: bool = False
    sib_only: bool = False
    nca: bool = True
    micro_probing: bool = True
    alpha_deg: float = 60.0
    beta_r: float = 0.5
    beta_theta: float = 1.0 / 3.0
    clip_probe: bool = True
    stop_check: str = "evidence"
    veto_margin: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ConfigError(f"dscd_nav.rounds must be a positive integer, got {self.rounds!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"dscd_nav.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.tsu_only and self.sib_only:
            raise ConfigError("dscd_nav: tsu_only and sib_only exclude each other")
        if self.stop_check not in STOP_CHECKS:
            raise ConfigError(f"dscd_nav.stop_check must be one of {STOP_CHECKS}, got {self.stop_check!r}")
        _positive("dscd_nav", alpha_deg=self.alpha_deg, beta_r=self.beta_r, beta_theta=self.beta_theta)
        if self.veto_margin < 0:
            raise ConfigError(f"dscd_nav.veto_margin must be >= 0, got {self.veto_margin!r}")
        if self.beta_r > 1 or self.beta_theta > 1 or self.alpha_deg > 180:
            raise ConfigError("dscd_nav: beta_r and beta_theta must be in (0, 1], alpha_deg in (0, 180]")


@dataclass(frozen=True)
class Round:
    """One debate round: each stance's parsed reply (None: no usable reply)."""

    index: int
    tsu: Decision | None
    sib: Decision | None

    @property
    def sib_decision(self) -> str | None:
        """SIB's declared ``agree`` / ``counter`` (None: no usable reply or no such word)."""
        word = self.sib.fields.get("decision", "").strip().lower() if self.sib is not None else ""
        return next((d for d in ("agree", "counter") if word.startswith(d)), None)

    @property
    def same_id(self) -> bool:
        return self.tsu is not None and self.sib is not None and self.tsu.action == self.sib.action

    @property
    def agree(self) -> bool:
        """Consensus (Alg. 1 l. 10): SIB declared ``agree`` to a proposal; without a
        readable declaration, the two ids match."""
        declared = self.sib_decision
        return self.tsu is not None and (declared == "agree" if declared is not None else self.same_id)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"round": self.index, "tsu": _id(self.tsu), "sib": _id(self.sib),
                               "sib_decision": self.sib_decision, "same_id": self.same_id,
                               "consensus": self.agree}
        for name, d in (("tsu", self.tsu), ("sib", self.sib)):
            for key in ("why", "evidence"):
                out[f"{name}_{key}"] = d.fields.get(key, "") if d is not None else ""
        return out

    def describe(self) -> str:
        """The round as the stances and the judge read it (the paper's Fig. 6 form)."""
        lines = [f"Round {self.index}:"]
        declared = self.sib_decision or ("agree" if self.agree else "counter")
        for name, d, prefix in (("TSU", self.tsu, ""), ("SIB", self.sib, f"{declared}, ")):
            if d is None:
                lines.append(f"{name}: (no usable reply)")
            else:
                lines.append(f"{name}: {prefix if name == 'SIB' else ''}id {d.action}. why: "
                             f"{d.fields.get('why', '')} evidence: {d.fields.get('evidence', '')}")
        return "\n".join(lines)


def _id(decision: Decision | None) -> str | None:
    return None if decision is None else decision.action


class DSCDNavAgent(LLMWaypointAgent):
    """DSCD-Nav (see the module docs)."""

    config_class = DSCDNavConfig
    name = "dscd_nav"
    system_prompt = NCA_SYSTEM
    decision_role = "nca"

    # -- X_t = (g, C_t, E_t) -----------------------------------------------------------

    def goal_text(self, view: StepView) -> str:
        category = self.state.episode.extra.get("object_category")
        return f"Find a {category} and stop close to it, with it in view." if category else view.instruction

    def candidate_notes(self, view: StepView) -> Mapping[str, str]:
        return {c.id: f"[r = {c.distance:.2f} m, theta = {c.heading_deg:+.0f} deg]" for c in view.candidates}

    def _context(self, view: StepView) -> tuple[Prompt, Prompt]:
        """The step's input with the goal (TSU, NCA: goal text, goal picture, dialogue and
        the goal's detections) and without any of it (SIB, §3.2.2)."""
        history = history_text(self.state.history, self.config.history_window)
        with_goal = Prompt([("text", f"Goal:\n{self.goal_text(view)}")])
        with_goal.section("Your last steps", history, cut="oldest")
        self.observation_sections(with_goal, view)
        self._goal_evidence(with_goal, view)
        free = Prompt()
        free.section("Your last steps", history, cut="oldest")
        self.observation_sections(free, replace(view, reference_image=None, dialogue=False))
        return with_goal, free

    def _goal_evidence(self, prompt: Prompt, view: StepView) -> None:
        """``stop_check`` evidence: where the goal category is detected (``gt``: the semantic
        sensor stands in for the paper's open-set detector)."""
        category = self.state.episode.extra.get("object_category")
        if self.config.stop_check == "off" or not category or view.objects is None:
            return
        seen = [f"{category} at {dist:.1f} m in view {v.view} ({direction_phrase(v.heading)})"
                for v in view.objects for name, dist in v.objects if name == category]
        prompt.section("Detector evidence for the goal", "\n".join(seen) or f"{category}: not detected in any view",
                       cut="shorten")

    # -- one step (Algorithm 1) ------------------------------------------------------

    def decide(self, view: StepView) -> Decision | None:
        cfg = self.config
        options = tuple(o for o in view.options if o != ASK)
        goal_ctx, free_ctx = self._context(_with_options(view, options))
        entry: dict[str, Any] = {"rounds": [], "judge": None, "micro_probe": False}
        self.record["debate"] = entry
        if cfg.tsu_only or cfg.sib_only:
            stance = "tsu" if cfg.tsu_only else "sib"
            ctx = goal_ctx if cfg.tsu_only else free_ctx
            decision = self._ask(self._stance(stance, ctx, (), None, options), stance, options)
            entry.update(mode="A", consensus=None)
            return self._finish(view, decision, (), entry)
        rounds = self._debate(goal_ctx, free_ctx, options)
        entry["rounds"] = [r.to_dict() for r in rounds]
        final = rounds[-1]
        entry["consensus"] = final.agree
        if cfg.nca:
            decision = self._arbitrate(view, goal_ctx, rounds, options)
            entry["judge"] = _id(decision)
            entry["override"] = decision is not None and final.tsu is not None and decision.action != final.tsu.action
            if decision is None:  # the judge failed: keep what the debate settled
                decision = final.tsu if final.agree else next((r.tsu for r in reversed(rounds) if r.tsu), None)
                entry["judge_fallback"] = None if decision is None else "consensus" if final.agree else "tsu"
        else:
            decision = final.tsu or final.sib
        self._execution_mode(view, decision, final, entry)
        return self._finish(view, decision, rounds, entry)

    def _debate(self, goal_ctx: Prompt, free_ctx: Prompt, options: Sequence[str]) -> list[Round]:
        rounds: list[Round] = []
        for k in range(1, self.config.rounds + 1):
            if k == 1 or self.config.schedule == "alternating":
                tsu = self._ask(self._stance("tsu", goal_ctx, rounds, None, options), "tsu", options)
                sib = self._ask(self._stance("sib", free_ctx, rounds, tsu, options), "sib", options)
            else:  # both read round k-1 only: independent, sent together
                asked = [(self._stance("tsu", goal_ctx, rounds, None, options), "tsu"),
                         (self._stance("sib", free_ctx, rounds, rounds[-1].tsu, options), "sib")]
                calls = [(self.fitted(*request, purpose).messages, purpose) for request, purpose in asked]
                tsu, sib = (self._parse(request, response, purpose, options)
                            for (request, purpose), response in zip(asked, self.consult_many(calls), strict=True))
            rounds.append(Round(k, tsu, sib))
            if rounds[-1].agree:
                break
        return rounds

    def _stance(self, stance: str, ctx: Prompt, rounds: Sequence[Round], proposal: Decision | None,
                options: Sequence[str]) -> tuple[Prompt, str]:
        """A stance's request: its prompt and system prompt."""
        prompt = Prompt(list(ctx.parts))
        prompt.section("Debate so far", "\n\n".join(r.describe() for r in rounds) or "(this is the first round)",
                       cut="oldest")
        if stance == "tsu":
            fields = {"why": "why this candidate advances toward the goal, briefly",
                      "evidence": "the visual, layout or commonsense cues you rely on", "action": "one option"}
            system = TSU_SYSTEM
        else:
            if proposal is not None:
                prompt.section("TSU's proposal to audit", f"id {proposal.action}. why: {proposal.fields.get('why', '')} "
                               f"evidence: {proposal.fields.get('evidence', '')}", cut="shorten")
            else:
                prompt.section("Your task", "No proposal to audit: choose the safest, most informative candidate.")
            fields = {"decision": "agree or counter", "why": "why, in terms of safety and information value",
                      "evidence": "the cues you rely on", "action": "the option you prefer (the proposed one if you agree)"}
            system = SIB_SYSTEM
        prompt.section("Reply format", output_format(self.config.prompt_variant, fields, options))
        return prompt, system

    def _arbitrate(self, view: StepView, goal_ctx: Prompt, rounds: Sequence[Round],
                   options: Sequence[str]) -> Decision | None:
        prompt = Prompt(list(goal_ctx.parts))
        prompt.section("Debate trace", "\n\n".join(r.describe() for r in rounds), cut="oldest")
        prompt.section("Reply format", output_format(self.config.prompt_variant, dict(self.reply_fields(view)), options))
        return self.choose(prompt, _with_options(view, options))

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        return {"why": "the unified rationale", "evidence": "the key evidence from both sides",
                "action": "one option"}

    # -- two-mode execution (Eqs. 8-13) ---------------------------------------------

    def _execution_mode(self, view: StepView, decision: Decision | None, final: Round, entry: dict) -> None:
        """Mode A, or Mode B with the micro-probe geometry (in ``entry["probe"]``)."""
        entry["mode"] = "A"
        if final.agree or decision is None or not self.config.micro_probing:
            return
        follows_tsu = final.tsu is not None and decision.action == final.tsu.action
        alt = final.sib if follows_tsu else final.tsu
        cards = {c.id: c for c in view.candidates}
        if alt is None or decision.action not in cards or alt.action not in cards:
            return
        star, other = cards[decision.action], cards[alt.action]
        r, theta, delta = soft_compromise(star.distance, star.heading, other.heading,
                                          self.config.beta_r, self.config.beta_theta)
        entry["alt"] = alt.action
        entry["delta_theta_deg"] = round(math.degrees(delta), 2)
        if abs(delta) <= math.radians(self.config.alpha_deg) + ANGLE_TOLERANCE:
            free = self._free_space.reach(view.panorama, theta) if self.config.clip_probe else math.inf
            entry.update(mode="B", micro_probe=True, probe={
                "r": round(min(r, free), 4), "theta_deg": round(math.degrees(theta), 2),
                "clipped": r > free, "r_compromise": round(r, 4), "r_free": round(free, 4) if free < math.inf else None})

    @property
    def _free_space(self) -> DepthWaypoints:
        """Free space along any heading (the predictor's own when it can tell)."""
        return self.predictor if isinstance(self.predictor, DepthWaypoints) else DepthWaypoints(self.config.waypoints)

    def _action(self, decision: Decision | None, view: StepView) -> Any:
        probe = self.record.get("debate", {}).get("probe")
        if probe is not None:
            return np.array([probe["r"], math.radians(probe["theta_deg"]), 0.0], dtype=np.float32)
        return super()._action(decision, view)

    def _log_step(self, view: StepView, decision: Decision | None) -> None:
        super()._log_step(view, decision)
        probe = self.record.get("debate", {}).get("probe")
        if probe is not None:
            self.state.history[-1] = (f"step {view.step}: micro-probed toward {decision.action} "
                                      f"({probe['r']:.1f} m at {probe['theta_deg']:+.0f} deg).")

    # -- stop verification -----------------------------------------------------------

    def _finish(self, view: StepView, decision: Decision | None, rounds: Sequence[Round], entry: dict) -> Decision | None:
        if decision is None:
            if "parsed" not in self.record:  # no judge: the stances gave nothing usable
                self.state.trace.fallbacks += 1
                self.record.update(fallback=True, parsed=None)
            return None
        self.record.setdefault("parsed", decision.to_dict())
        if (decision.action != STOP or self.config.stop_check != "veto" or not view.candidates
                or self.state.episode.task != OBJECTNAV):
            return decision
        confirmed, how = self._target_in_view(view)
        entry["stop_verification"] = {"confirmed": confirmed, "by": how}
        if confirmed:
            return decision
        moves = [d.action for r in reversed(rounds) for d in (r.tsu, r.sib) if d is not None and d.action != STOP]
        ahead = min(view.candidates, key=lambda c: (round(abs(c.heading), 6), -c.distance)).id
        entry["stop_rejected_for"] = (moves or [ahead])[0]
        return Decision(entry["stop_rejected_for"], fields={"why": "STOP rejected: the target is not confirmed in view"})

    def _target_in_view(self, view: StepView) -> tuple[bool, str]:
        extra = self.state.episode.extra
        category = extra.get("object_category")
        if view.objects is not None and category:
            if "success_distance" not in extra:
                raise ConfigError("dscd_nav: stop_check 'veto' needs the episode's success radius")
            reach = float(extra["success_distance"]) + self.config.veto_margin
            seen = any(name == category and dist <= reach for v in view.objects for name, dist in v.objects)
            return seen, "semantic"
        prompt = Prompt()
        prompt.section("Goal", self.goal_text(view))
        self.observation_sections(prompt, view)
        prompt.section("Question", 'Is the goal target clearly visible and close now? Reply with one JSON object: '
                                   '{"visible": "yes or no", "evidence": "<what you see>"}')
        response = self.consult(self.fitted(prompt, VERIFY_SYSTEM, "stop verification").messages, "stop verification")
        try:
            answer = reply_fields(response.text).get("visible", "")
        except ReplyError:
            answer = ""
        return answer.strip().lower() in AFFIRMATIVE, "vlm"

    # -- stance replies ---------------------------------------------------------------

    def _ask(self, asked: tuple[Prompt, str], purpose: str, options: Sequence[str]) -> Decision | None:
        return self._parse(asked, self.consult(self.fitted(*asked, purpose).messages, purpose), purpose, options)

    def _parse(self, asked: tuple[Prompt, str], response: Any, purpose: str,
               options: Sequence[str]) -> Decision | None:
        """The stance's decision (its arguments capped); one repair prompt, then None
        (counted in the trace); None at once for a request too long to send."""
        trace = self.state.trace
        for attempt in range(2):
            if response.finish_reason == TOO_LONG:
                return None
            text = response.text
            try:
                decision = parse_reply(text, options)
                return Decision(decision.action, decision.question,
                                {key: self.capped(value) for key, value in decision.fields.items()})
            except ReplyError as exc:
                trace.failures[exc.kind] += 1
                if attempt:
                    return None
                trace.repairs += 1
                self.record["repair"] = True
                turns = [ChatMessage.assistant(repair_echo(text)),
                         ChatMessage.user(f"Your reply could not be used ({exc}). Reply again in the format asked; "
                                          f"the action must be exactly one of: {', '.join(options)}.")]
                messages = self.fitted(*asked, purpose, reserve=reserve_for(turns)).messages
                response = self.consult([*messages, *turns], purpose)
        return None

    def trace(self) -> Mapping[str, Any] | None:
        out = super().trace()
        if out is not None:
            out["debate"] = [step["debate"] for step in out["steps"] if "debate" in step]
            out["debate_max_rounds"] = self.config.rounds
        return out


def _with_options(view: StepView, options: Sequence[str]) -> StepView:
    """``view`` offering ``options`` (ASK removed: the stances do not ask)."""
    return replace(view, options=tuple(options))
