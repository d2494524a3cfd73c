"""Episodes of one scene: sample trajectories, write instructions, render references.

:func:`generate_scene_episodes` is the unit of work of dataset generation (one scene, one
process). Its randomness comes only from ``(seed, scene id)``, so a scene gives the same
episodes whichever worker runs it and whatever else runs.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse import __version__
from vlnverse.config import config_from_mapping
from vlnverse.errors import ConfigError
from vlnverse.fileio import write_bytes_atomic
from vlnverse.llm import LLMClient
from vlnverse.llm.images import encode_png
from vlnverse.registry import load_entry_point
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.corpus import stable_hash
from vlnverse.tasks.dvs import DVS_VERSION, InstructionPipeline, PipelineConfig, PipelineResult
from vlnverse.tasks.episode import (
    STYLES,
    TASKS,
    VLN_TASKS,
    Episode,
    Goal,
    Instruction,
    Provenance,
    yaw_to_quaternion,
)
from vlnverse.tasks.eqa import EQAConfig
from vlnverse.tasks.objectnav import ObjectNavConfig
from vlnverse.tasks.pathdesc import describe_path
from vlnverse.tasks.prior import (
    PRIOR_VERSION,
    chain_instruction,
    coarse_instruction,
    coarse_variants,
    fine_instruction,
)
from vlnverse.tasks.registry import task_families, task_family
from vlnverse.tasks.render import RenderConfig, SceneRenderer
from vlnverse.tasks.sampling import SAMPLER_VERSION, SamplingConfig, Trajectory, TrajectorySampler

log = logging.getLogger(__name__)

COARSE_FAMILY = ("coarse", "visual_reference", "dialogue")


@dataclass(frozen=True)
class GenerationConfig:
    """What to generate per scene (defaults follow the paper's Table 2 proportions).

    Attributes:
        tasks: Task types to generate (default: the five VLN tasks; the other registered
            families, :mod:`vlnverse.tasks.registry`, on request).
        per_scene: Coarse trajectories per scene (the unit of Table 2: coarse, visual
            reference and dialogue share them).
        fine_ratio: Fine trajectories per coarse one (3963 / 11895 in Table 2).
        long_horizon_ratio: Long-horizon episodes per coarse trajectory (11946 / 11895).
        val_seen_fraction: Share of a train scene's episodes held out as ``val_seen``
            (1269 / (11895 + 1269)).
        long_horizon_val_seen_fraction: The same for long-horizon episodes when they differ
            (Table 2: 1329 / (11946 + 1329)); None = ``val_seen_fraction``.
        coarse_style: Style of ``instruction.text`` for coarse-family episodes (the public
            evaluator's default is ``formal``).
        question_budget: Dialogue: questions per episode.
        render: Render visual-reference images (and Describer frames when an LLM is used).
        agent_radius, agent_height, resolution: Occupancy map of the agent (m).
        sampling: Path sampling settings.
        pipeline: LLM pipeline settings.
        rendering: Camera settings of rendered images.
        objectnav: ObjectNav settings (``per_scene`` episodes per scene when ``objectnav`` is asked for).
        eqa: EQA settings (``per_scene`` questions per scene when ``eqa`` is asked for).
        families: Settings of the other registered families that make their own episodes,
            by task name (``generation.families.<task>``; each family's settings class,
            defaults where absent).
    """

    tasks: tuple[str, ...] = VLN_TASKS
    per_scene: int = 30
    fine_ratio: float = 0.3333
    long_horizon_ratio: float = 1.0
    val_seen_fraction: float = 0.0964
    long_horizon_val_seen_fraction: float | None = None
    coarse_style: str = "formal"
    question_budget: int = 3
    render: bool = False
    agent_radius: float = 0.30
    agent_height: float = 1.50
    resolution: float = 0.05
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    rendering: RenderConfig = field(default_factory=RenderConfig)
    objectnav: ObjectNavConfig = field(default_factory=ObjectNavConfig)
    eqa: EQAConfig = field(default_factory=EQAConfig)
    families: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tasks = tuple(self.tasks)
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise ConfigError(f"unknown task(s) {', '.join(unknown) or '(none given)'}; valid: {', '.join(TASKS)}")
        object.__setattr__(self, "tasks", tuple(t for t in TASKS if t in tasks))
        if not (isinstance(self.per_scene, int) and self.per_scene > 0):
            raise ConfigError(f"per_scene must be a positive integer, got {self.per_scene!r}")
        for name in ("fine_ratio", "long_horizon_ratio"):
            if not (isinstance(getattr(self, name), int | float) and getattr(self, name) >= 0):
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("val_seen_fraction", "long_horizon_val_seen_fraction"):
            value = getattr(self, name)
            if not (value is None and name.startswith("long") or isinstance(value, int | float) and 0 <= value < 1):
                raise ConfigError(f"{name} must be in [0, 1), got {value!r}")
        if self.coarse_style not in STYLES:
            raise ConfigError(f"coarse_style must be one of {STYLES}, got {self.coarse_style!r}")
        if not (isinstance(self.question_budget, int) and self.question_budget >= 0):
            raise ConfigError(f"question_budget must be a non-negative integer, got {self.question_budget!r}")
        families = {}
        for name, value in dict(self.families).items():
            family = task_family(name)
            if family.settings is None or name in {f.name for f in fields(self)}:
                raise ConfigError(f"generation.families.{name}: that task has no settings there")
            settings = load_entry_point(family.settings)
            families[name] = value if isinstance(value, settings) else config_from_mapping(
                settings, value, where=f"generation.families.{name}")
        object.__setattr__(self, "families", families)

    def settings_for(self, task: str) -> Any:
        """The generation settings of family ``task`` (its field here, else ``families``, else defaults)."""
        if task in {f.name for f in fields(self)}:
            return getattr(self, task)
        return self.families.get(task) or load_entry_point(task_family(task).settings)()

    def counts(self) -> dict[str, int]:
        """Trajectories to sample per scene: ``{"fine", "coarse", "long_horizon"}``."""
        wanted = set(self.tasks)
        return {
            "fine": round(self.per_scene * self.fine_ratio) if "fine" in wanted else 0,
            "coarse": self.per_scene if wanted & set(COARSE_FAMILY) else 0,
            "long_horizon": round(self.per_scene * self.long_horizon_ratio) if "long_horizon" in wanted else 0,
        }


def generator_versions(llm: LLMClient | None, pipeline: InstructionPipeline | None) -> dict[str, str]:
    versions = {"vlnverse": __version__, "sampler": SAMPLER_VERSION, "prior": PRIOR_VERSION}
    if pipeline is not None:
        versions.update(dvs=DVS_VERSION, prompts=pipeline.prompts.digest, model=llm.model)
    return versions


@dataclass
class SceneEpisodes:
    """The result of one scene: its episodes, the images written, and counters."""

    episodes: list[Episode]
    images: list[str]
    fallbacks: int = 0
    shortfall: dict[str, int] = field(default_factory=dict)


class _Splitter:
    """Assigns train-scene trajectories to ``train`` / ``val_seen`` (seeded).

    A scene holds out ``n * fraction`` trajectories rounded down or up at random with the
    odds of the fractional part, so a corpus's share of ``val_seen`` is the fraction (Table 2)
    rather than drifting by a rounding bias repeated over every scene.
    """

    def __init__(self, scene_split: str, fraction: float, rng: np.random.Generator) -> None:
        self.scene_split, self.fraction, self.rng = scene_split, fraction, rng

    def assign(self, n: int, fraction: float | None = None) -> list[str]:
        if self.scene_split != "train":
            return [self.scene_split] * n
        held = math.floor(n * (self.fraction if fraction is None else fraction) + self.rng.random())
        labels = np.array(["train"] * (n - held) + ["val_seen"] * held, dtype=object)
        return list(labels[self.rng.permutation(n)])


def generate_scene_episodes(
    context: SceneContext,
    *,
    scene_split: str,
    scene_rel_path: str,
    config: GenerationConfig,
    seed: int,
    out_dir: str | Path,
    llm: LLMClient | None = None,
) -> SceneEpisodes:
    """All episodes of one scene.

    Args:
        context: The prepared scene.
        scene_split: ``train`` / ``val_unseen`` / ``test`` (train also yields ``val_seen``).
        scene_rel_path: Scene path stored in the episodes (relative to the corpus root).
        config: What to generate.
        seed: Dataset seed (combined with the scene id).
        out_dir: Dataset root (rendered images go to ``images/<scene_id>/``).
        llm: Chat model for the Describer/Verifier/Synthesizer; None for prior-only text.
    """
    scene_id = context.scene_id
    streams = np.random.SeedSequence([seed, stable_hash(scene_id)]).spawn(3)
    sample_rng, text_rng, split_rng = (np.random.default_rng(s) for s in streams)
    sampler = TrajectorySampler(context, config.sampling, sample_rng)
    counts = config.counts()
    fine = sampler.sample_fine(counts["fine"]) if counts["fine"] else []
    coarse = sampler.sample_coarse(counts["coarse"]) if counts["coarse"] else []
    chains = sampler.sample_chains(counts["long_horizon"]) if counts["long_horizon"] else []
    shortfall = {k: v - n for k, v, n in (("fine", counts["fine"], len(fine)), ("coarse", counts["coarse"], len(coarse)),
                                          ("long_horizon", counts["long_horizon"], len(chains))) if n < v}
    if shortfall:
        log.info("%s: fewer trajectories than asked: %s", scene_id, shortfall)
    pipeline = InstructionPipeline(llm, config.pipeline) if llm is not None else None
    writer = _EpisodeWriter(context, config, seed, scene_rel_path, Path(out_dir), pipeline, text_rng,
                            generator_versions(llm, pipeline))
    splitter = _Splitter(scene_split, config.val_seen_fraction, split_rng)
    try:
        episodes = writer.fine_episodes(fine, splitter.assign(len(fine)))
        episodes += writer.coarse_episodes(coarse, splitter.assign(len(coarse)))
        episodes += writer.chain_episodes(chains, splitter.assign(len(chains), config.long_horizon_val_seen_fraction))
        for family in task_families():  # the families that make their own episodes, in registry order
            if family.generator is not None and family.name in config.tasks:
                make = load_entry_point(family.generator)
                episodes += make(context, config.settings_for(family.name), config.per_scene, seed,
                                 splitter.assign, writer)
    finally:
        writer.close()
    order = {t: i for i, t in enumerate(TASKS)}
    episodes.sort(key=lambda e: (order[e.task], e.episode_id))
    return SceneEpisodes(episodes, sorted(writer.images), writer.fallbacks, shortfall)


class _EpisodeWriter:
    """Turns trajectories into episodes (text, images, provenance) for one scene."""

    def __init__(self, context, config: GenerationConfig, seed, rel_path, out_dir: Path, pipeline, rng, versions):
        self.context, self.config, self.seed, self.rel_path = context, config, seed, rel_path
        self.out_dir, self.pipeline, self.rng, self.versions = out_dir, pipeline, rng, versions
        self.images: list[str] = []
        self.fallbacks = 0
        self._renderer: SceneRenderer | None = None

    @property
    def renderer(self) -> SceneRenderer | None:
        if not self.config.render:
            return None
        if self._renderer is None:
            self._renderer = SceneRenderer(self.context.scene, self.config.rendering)
        return self._renderer

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()

    def _provenance(self, result: PipelineResult | None) -> Provenance:
        if result is None:
            return Provenance(seed=self.seed, generator=self.versions)
        self.fallbacks += result.fallback is not None
        return Provenance(seed=self.seed, generator=self.versions, instruction_source=result.source,
                          stages=result.stages, fallback=result.fallback)

    def _episode(self, trajectory_id: str, task: str, split: str, start, yaw, goals, points, length, instruction,
                 provenance, **extra) -> Episode:
        return Episode(
            episode_id=f"{trajectory_id}-{task}", trajectory_id=trajectory_id, scene_id=self.context.scene_id,
            scene_path=self.rel_path, split=split, task=task, start_position=tuple(start),
            start_rotation=yaw_to_quaternion(yaw), goals=tuple(goals), reference_path=tuple(map(tuple, points)),
            geodesic_distance=length, instruction=instruction, provenance=provenance, **extra)

    def _goal(self, trajectory: Trajectory) -> Goal:
        target = trajectory.target
        return Goal(position=tuple(trajectory.goal), radius=self.config.sampling.goal_radius,
                    object_id=target.object_id if target else None, room_id=trajectory.goal_room,
                    category=self.context.objects[target.object_id].category if target else None)

    # -- fine ------------------------------------------------------------------------------
    def fine_episodes(self, trajectories: list[Trajectory], splits: list[str]) -> list[Episode]:
        out = []
        for k, (trajectory, split) in enumerate(zip(trajectories, splits, strict=False)):
            facts = describe_path(self.context, trajectory.points, trajectory.start_yaw)
            instruction = fine_instruction(self.context, facts, self.rng)
            result = None
            if self.pipeline is not None:
                frames = self.renderer.path_frames(trajectory.points) if self.renderer else []
                result = self.pipeline.fine(self.context, instruction, frames, facts)
                instruction = result.instruction
            out.append(self._episode(f"{self.context.scene_id}-f{k:04d}", "fine", split, trajectory.start,
                                     trajectory.start_yaw, [self._goal(trajectory)], trajectory.points,
                                     trajectory.length, instruction, self._provenance(result)))
        return out

    # -- coarse family -----------------------------------------------------------------------
    def _coarse_text(self, trajectory: Trajectory, image) -> tuple[Instruction, PipelineResult | None]:
        prior = coarse_instruction(trajectory.target, self.rng, self.config.coarse_style)
        if self.pipeline is None:
            return prior, None
        variants = coarse_variants(trajectory.target, self.config.pipeline.verifier_variants)
        result = self.pipeline.coarse(self.context, trajectory.target, prior, variants, image)
        return result.instruction, result

    def _target_image(self, trajectory: Trajectory):
        if self.renderer is None:
            return None
        return self.renderer.target_view(trajectory.goal, self.context.objects[trajectory.target.object_id].center)

    def coarse_episodes(self, trajectories: list[Trajectory], splits: list[str]) -> list[Episode]:
        tasks = [t for t in COARSE_FAMILY if t in self.config.tasks]
        out = []
        for k, (trajectory, split) in enumerate(zip(trajectories, splits, strict=False)):
            trajectory_id = f"{self.context.scene_id}-c{k:04d}"
            image = self._target_image(trajectory)
            instruction, result = self._coarse_text(trajectory, image)
            provenance = self._provenance(result)
            image_path = None
            if image is not None and "visual_reference" in tasks:
                image_path = f"images/{self.context.scene_id}/{trajectory_id}.png"
                write_bytes_atomic(self.out_dir / image_path, encode_png(image))
                self.images.append(image_path)
            for task in tasks:
                extra = {}
                if task == "visual_reference":
                    extra["reference_image"] = image_path
                if task == "dialogue":
                    extra["question_budget"] = self.config.question_budget
                out.append(self._episode(trajectory_id, task, split, trajectory.start, trajectory.start_yaw,
                                         [self._goal(trajectory)], trajectory.points, trajectory.length,
                                         instruction, provenance, **extra))
        return out

    # -- long-horizon ------------------------------------------------------------------------
    def chain_episodes(self, chains: list[list[Trajectory]], splits: list[str]) -> list[Episode]:
        out = []
        for k, (legs, split) in enumerate(zip(chains, splits, strict=False)):
            parts, results = [], []
            for leg in legs:
                instruction, result = self._coarse_text(leg, self._target_image(leg) if self.pipeline else None)
                parts.append(instruction)
                results.append(result)
            instruction = chain_instruction(parts, self.rng)
            points = np.concatenate([legs[0].points] + [leg.points[1:] for leg in legs[1:]])
            lengths = [leg.length for leg in legs]
            provenance = self._chain_provenance(results)
            out.append(self._episode(f"{self.context.scene_id}-l{k:04d}", "long_horizon", split, legs[0].start,
                                     legs[0].start_yaw, [self._goal(leg) for leg in legs], points, sum(lengths),
                                     instruction, provenance, subgoal_distances=tuple(lengths)))
        return out

    def _chain_provenance(self, results: list[PipelineResult | None]) -> Provenance:
        if results[0] is None:
            return Provenance(seed=self.seed, generator=self.versions)
        reasons = [f"sub-goal {i + 1}: {r.fallback}" for i, r in enumerate(results) if r.fallback]
        self.fallbacks += len(reasons)
        sources = {r.source for r in results}
        source = sources.pop() if len(sources) == 1 else "mixed:" + ",".join(sorted(sources))
        return Provenance(seed=self.seed, generator=self.versions, instruction_source=source,
                          stages=max((r.stages for r in results), key=len), fallback="; ".join(reasons) or None)
