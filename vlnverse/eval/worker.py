"""The unit of evaluation work and the worker that does it (in-process, pool or Ray actor).

A :class:`RunSpec` (everything every episode of a run shares) and a :class:`WorkItem`
(one episode under one physics mode) are plain picklable values. An :class:`EvalWorker`
builds the agent once and keeps the last few envs (one per scene and physics mode), so a
worker loads each scene once while it works through that scene's episodes.
"""

from __future__ import annotations

import logging
import pickle
import traceback
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse.eval.agent import Agent, as_agent
from vlnverse.eval.metrics import MetricsConfig
from vlnverse.eval.runner import EpisodeTiming, run_episode

logger = logging.getLogger(__name__)

ENV_CACHE_SIZE = 2
"""Envs a worker keeps alive (scene x physics); items arrive grouped, so 2 covers a switch."""


@dataclass(frozen=True)
class RunSpec:
    """What every episode of a run shares (picklable: it is sent to every worker).

    Attributes:
        agent: A registered agent name / ``module:attr``, or an agent object (an
            :class:`~vlnverse.eval.agent.Agent`, policy or callable; pickled to workers).
        agent_config: The agent's config mapping (for a name).
        seed: Run seed (env resets and agents' randomness derive from it per episode).
        backend: Simulator backend.
        max_steps: Step budget per episode (``None``: the action space's default).
        metrics: Scoring settings.
        plots_dir: Folder for trajectory pictures (``None``: no pictures).
        occupancy_resolution: Grid resolution of the navigation maps (m).
        instruction_view: What long-horizon agents read (see
            :data:`vlnverse.envs.episode.INSTRUCTION_VIEWS`).
    """

    agent: Any
    agent_config: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    backend: str = "bullet"
    max_steps: int | None = None
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    plots_dir: str | None = None
    occupancy_resolution: float = 0.05
    instruction_view: str = "full"


@dataclass(frozen=True)
class WorkItem:
    """One episode under one physics mode.

    Attributes:
        episode: The episode's canonical dict (:meth:`vlnverse.tasks.episode.Episode.to_dict`).
        physics: ``strict``, ``slide`` or ``tel_hop``.
        scene_file: Absolute path of the episode's USD scene.
        reference_image: Absolute path of the visual-reference image, if any.
        plot: Draw this episode's trajectory picture.
    """

    episode: Mapping[str, Any]
    physics: str
    scene_file: str
    reference_image: str | None = None
    plot: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return str(self.episode["episode_id"]), self.physics


@dataclass(frozen=True)
class WorkResult:
    """A finished item: its ``episodes.jsonl`` record and where the time went."""

    record: dict[str, Any]
    timing: EpisodeTiming


def env_cache_size(backend: str) -> int:
    """Envs a worker keeps for ``backend``: one for Isaac Sim, whose ``World`` is a process
    singleton (a second live env would clear the first), else :data:`ENV_CACHE_SIZE`."""
    from vlnverse.sim.backend import resolve_backend

    return 1 if resolve_backend(backend) == "isaac" else ENV_CACHE_SIZE


def build_agent(spec: RunSpec) -> Agent:
    """The run's agent (a fresh one from the registry, or the given object)."""
    if isinstance(spec.agent, str):
        from vlnverse.eval.registry import make_agent

        return make_agent(spec.agent, spec.agent_config)
    return as_agent(spec.agent)


class EvalWorker:
    """Runs work items with one agent and a small cache of envs.

    Raises (from :meth:`run`): errors building an env (missing scene, bad config) are
    raised, since they are not the agent's fault and would fail every episode alike.
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.agent = build_agent(spec)
        self._envs: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def env(self, scene_file: str, physics: str) -> Any:
        """The env of ``scene_file`` under ``physics`` (built on first use, LRU-cached)."""
        key = (scene_file, physics)
        if key in self._envs:
            self._envs.move_to_end(key)
            return self._envs[key]
        from vlnverse.envs.nav_env import NavEnv

        while len(self._envs) >= env_cache_size(self.spec.backend):
            old_key, old = self._envs.popitem(last=False)
            old.close()
        env = NavEnv(scene_file, backend=self.spec.backend, physics=physics,
                     action_space=self.agent.action_space, sensors=self.agent.sensors,
                     max_episode_steps=self.spec.max_steps,
                     occupancy_resolution=self.spec.occupancy_resolution,
                     instruction_view=self.spec.instruction_view)
        self._envs[key] = env
        return env

    def run(self, item: WorkItem) -> WorkResult:
        """Evaluate one item (agent failures are recorded in the result, not raised)."""
        from vlnverse.tasks.episode import Episode

        episode = Episode.from_dict(item.episode)
        env = self.env(item.scene_file, item.physics)
        record, timing = run_episode(
            env, self.agent, episode, physics=item.physics, seed=self.spec.seed,
            metrics=self.spec.metrics, reference_image=item.reference_image,
        )
        record["plot"] = None
        if item.plot and self.spec.plots_dir:
            from vlnverse.eval.plots import plot_filename, save_episode_plot

            name = plot_filename(record)
            try:
                save_episode_plot(Path(self.spec.plots_dir) / name, env.scene, env.occupancy, record)
                record["plot"] = f"{Path(self.spec.plots_dir).name}/{name}"
            except Exception as exc:  # noqa: BLE001 - a picture is not worth an episode
                logger.warning("episode %s: trajectory plot failed: %s", episode.episode_id, exc)
        return WorkResult(record, timing)

    def close(self) -> None:
        """Close the envs and the agent."""
        while self._envs:
            _, env = self._envs.popitem()
            env.close()
        self.agent.close()


# -- local process pool: one EvalWorker per process, fed one item at a time ------------------


def run_process_worker(worker_id: int, spec: RunSpec, inbox: Any, results: Any) -> None:
    """Process main of the local pool: run the items from ``inbox`` until ``None``, putting
    ``(worker_id, result)`` on ``results``. An error (the worker or an env cannot be built)
    is put there instead, to be raised in the parent, and ends the process."""
    worker = None
    try:
        worker = EvalWorker(spec)
        for item in iter(inbox.get, None):
            results.put((worker_id, worker.run(item)))
    except KeyboardInterrupt:
        pass  # Ctrl-C reached the parent too, which stops the run
    except Exception as exc:  # noqa: BLE001 - raised again in the parent
        results.put((worker_id, picklable_error(exc)))
    finally:
        if worker is not None:
            worker.close()


def picklable_error(error: Exception) -> Exception:
    """``error`` if it survives pickling (to go back to the parent), else a RuntimeError
    carrying its formatted traceback."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any pickling failure
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return RuntimeError(f"an eval worker failed (the error cannot be sent back):\n{text}")
    return error
