"""``evaluate``: run an agent over a dataset's episodes under one or more physics modes.

The output folder holds:

- ``episodes.jsonl`` — one record per (episode, physics mode), appended as episodes finish
  (:mod:`vlnverse.eval.running.store`); a re-run with the same settings skips finished ones;
- ``run.json`` — the settings that decide the results (a re-run with other settings into
  the same folder is refused, so records of two runs never mix) and, after an LLM run,
  ``llm_features``: how the endpoint served each capability (structured output, JSON
  mode, tools, ``n``, images; see :mod:`vlnverse.llm.negotiate`) and the context windows
  the agents fitted their prompts to (from the spec, or learned from the server);
- ``summary.json`` / ``summary.md`` — Tables 5 and 6 (:mod:`vlnverse.eval.reporting.report`), with the
  run's LLM usage and trace metrics when there are any;
- ``llm_budget.json`` — what the run has billed in this folder, over every invocation (a
  run that spends its token/USD budget stops cleanly; re-running the command with a larger
  budget continues it, and a re-run with the spent budget starts no episode);
- ``llm_cache/`` — with a budget and no ``llm_cache`` of the user's: every answered call, so
  that the episode a budget interrupted replays its calls for free when it resumes;
- ``plots/*.png`` and ``index.html`` — trajectory pictures of a sample of episodes and a
  sortable page listing every episode (:mod:`vlnverse.eval.reporting.html_index`), each linked to its
  step-by-step page in ``viewer/`` (:mod:`vlnverse.eval.reporting.viewer`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse import __version__
from vlnverse.envs.episode import INSTRUCTION_VIEWS
from vlnverse.errors import ConfigError
from vlnverse.eval.registry import agent_factory, agent_label, augmented_label, takes_llm
from vlnverse.eval.reporting.health import DEFAULT_FALLBACK_WARNING
from vlnverse.eval.reporting.html_index import write_index
from vlnverse.eval.reporting.report import summarize, summary_markdown
from vlnverse.eval.reporting.viewer import VIEWER_DIR, write_episode_pages
from vlnverse.eval.running.executors import run_items
from vlnverse.eval.running.inputs import checkpoint_checksums, input_checksums
from vlnverse.eval.running.store import (
    TRACE_TEXT_CHARS,
    ResultStore,
    error_record,
    json_safe,
    record_key,
)
from vlnverse.eval.running.timings import append_timing, timing_row
from vlnverse.eval.running.worker import RunSpec, WorkItem, WorkResult, build_agent
from vlnverse.eval.scoring.episode_record import MetricsConfig, trace_metric_settings
from vlnverse.eval.scoring.pooled import endings_by_physics
from vlnverse.fileio import (
    OutputLock,
    prepare_output_dir,
    remove_stale_temp_files,
    write_json_atomic,
    write_text_atomic,
)
from vlnverse.llm.factory import check_llm_credentials, check_llm_spec, describe_llm_spec
from vlnverse.parallel import EXECUTORS, import_ray
from vlnverse.sim.physics import PhysicsConfig, physics_mode

logger = logging.getLogger(__name__)

RUN_FILE = "run.json"
BUDGET_FILE = "llm_budget.json"
LLM_CACHE_DIR = "llm_cache"
EPISODES_FILE = "episodes.jsonl"
PLOTS_DIR = "plots"
DEFAULT_EPISODE_TIMEOUT_S = 900.0
"""Per-episode limit: generous for LLM agents (hundreds of calls), finite so none hangs a run."""


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run.

    Attributes:
        dataset: Dataset folder (or one ``.jsonl(.gz)`` file).
        out: Output folder.
        agent: Registered agent name or ``module:attr`` (see :mod:`vlnverse.eval.registry`).
        agent_config: The agent's settings.
        split: Split name or ``all``.
        task: Task name or ``all``.
        physics: Physics modes to evaluate each episode under.
        episodes: Evaluate a seeded random sample of this many episodes (``None``: all).
        episode_ids: Only these episodes of the selection (``None``: every one); ``eval verify``
            re-simulates exactly the recorded ones with it.
        workers: Parallel workers (each with its own agent and envs).
        executor: ``local`` (process pool; in-process for one worker) or ``ray``.
        ray_address: Ray cluster address (``None``: a local Ray instance).
        seed: Run seed (episode sample, env resets, agents' randomness).
        max_steps: Step budget per episode (``None``: the action space's default, 500
            discrete steps).
        success_distance: Success radius (m): SR needs geodesic distance ``<`` it.
        plots: Episodes per (task, physics) that get a trajectory picture and per-step
            viewer frames (0: none).
        backend: Simulator backend.
        renderer: Camera renderer of the embedded backend (``auto``, ``gl``, ``tiny``).
        scenes_dir: Where the dataset's scene paths are relative to (default: the manifest's).
        bootstrap: Bootstrap resamples of the confidence intervals.
        instruction_view: Long-horizon observation: ``full`` (the whole chained
            instruction, the paper's; default) or ``leg`` (the active leg only).
        llm: The agent's model, a :func:`vlnverse.llm.make_llm` spec (built in the workers);
            default: the agent config's ``llm`` (see :meth:`model_spec`).
        llm_cache: Response cache folder (a repeated run makes no calls).
        llm_record: JSONL transcript of every call (for ``replay:FILE``).
        budget_tokens: Billed tokens the output folder may use in all, over every
            invocation of the run (None: no limit).
        budget_usd: Billed USD the output folder may spend in all (None: no limit).
        concurrency: Episodes each worker runs at once (overlapping the model's latency).
        oracle_llm: The dialogue oracle's model spec (None: the template oracle).
        oracle_llm_record: JSONL transcript of every oracle call (for ``replay:FILE``).
        metrics: Scoring settings other than ``success_distance`` (trace-metric
            parameters: AORI, the debate's ``R_max``).
        episode_timeout: Wall-clock limit of one episode in seconds (``None``: none); an
            episode past it ends with ``fail_reason = "timeout"`` and the run goes on. One
            that does not stop (blocked in native code) is stopped by killing its worker
            process (:func:`vlnverse.eval.running.worker.hard_limit`).
        trace_text_chars: The most characters of one text of an agent trace kept in the
            record (a model's reply; longer ones are cut, with their length and hash).
        fallback_warning: Share of the agent's steps decided by its fallback move above
            which the run is flagged (:mod:`vlnverse.eval.reporting.health`).
        retry_errors: Run again the selection's episodes whose record ended in ``error``
            (their records are replaced; every other record is kept).
        label: The agent's name in tables and pages (default: ``agent_label(agent)``, a file's agent by its class).
    """

    dataset: str
    out: str
    agent: str
    agent_config: Mapping[str, Any] = field(default_factory=dict)
    split: str = "all"
    task: str = "all"
    physics: tuple[str, ...] = ("strict", "tel_hop")
    episodes: int | None = None
    episode_ids: tuple[str, ...] | None = None
    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None
    seed: int = 0
    max_steps: int | None = None
    success_distance: float = 3.0
    plots: int = 6
    backend: str = "bullet"
    renderer: str = "auto"
    scenes_dir: str | None = None
    bootstrap: int = 1000
    instruction_view: str = "full"
    llm: str | None = None
    llm_cache: str | None = None
    llm_record: str | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    concurrency: int = 1
    oracle_llm: str | None = None
    oracle_llm_record: str | None = None
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    episode_timeout: float | None = DEFAULT_EPISODE_TIMEOUT_S
    fallback_warning: float = DEFAULT_FALLBACK_WARNING
    retry_errors: bool = False
    trace_text_chars: int = TRACE_TEXT_CHARS
    label: str | None = None

    def __post_init__(self) -> None:
        physics = tuple(physics_mode(p) for p in self.physics)
        if not physics:
            raise ConfigError("give at least one physics mode")
        if len(set(physics)) != len(physics):
            raise ConfigError(f"physics modes repeat: {', '.join(physics)}")
        object.__setattr__(self, "physics", physics)
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}; valid: {', '.join(EXECUTORS)}")
        for name in ("workers", "concurrency"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.episodes is not None and (not isinstance(self.episodes, int) or self.episodes < 1):
            raise ConfigError(f"episodes must be a positive integer, got {self.episodes!r}")
        if self.max_steps is not None and (not isinstance(self.max_steps, int) or self.max_steps < 1):
            raise ConfigError(f"max_steps must be a positive integer, got {self.max_steps!r}")
        if not isinstance(self.plots, int) or self.plots < 0:
            raise ConfigError(f"plots must be a non-negative integer, got {self.plots!r}")
        if not isinstance(self.bootstrap, int) or self.bootstrap < 1:
            raise ConfigError(f"bootstrap must be a positive integer, got {self.bootstrap!r}")
        if not isinstance(self.success_distance, (int, float)) or not math.isfinite(self.success_distance) \
                or self.success_distance <= 0:
            raise ConfigError(f"success_distance must be a positive number, got {self.success_distance!r}")
        if self.instruction_view not in INSTRUCTION_VIEWS:
            raise ConfigError(f"instruction_view must be one of {', '.join(INSTRUCTION_VIEWS)}, "
                              f"got {self.instruction_view!r}")
        if self.episode_timeout is not None and (not isinstance(self.episode_timeout, (int, float))
                                                 or not self.episode_timeout > 0):
            raise ConfigError(f"episode_timeout must be a positive number of seconds, got {self.episode_timeout!r}")
        if isinstance(self.fallback_warning, bool) or not isinstance(self.fallback_warning, (int, float)) \
                or not 0 <= self.fallback_warning <= 1:
            raise ConfigError(f"fallback_warning must be a share in [0, 1], got {self.fallback_warning!r}")
        if not isinstance(self.trace_text_chars, int) or isinstance(self.trace_text_chars, bool) \
                or self.trace_text_chars < 256:
            raise ConfigError(f"trace_text_chars must be an integer >= 256, got {self.trace_text_chars!r}")
        if self.budget_tokens is not None and (not isinstance(self.budget_tokens, int) or self.budget_tokens < 1):
            raise ConfigError(f"budget_tokens must be a positive integer, got {self.budget_tokens!r}")
        if self.budget_usd is not None and not (isinstance(self.budget_usd, (int, float))
                                                and math.isfinite(self.budget_usd) and self.budget_usd > 0):
            raise ConfigError(f"budget_usd must be a positive number, got {self.budget_usd!r}")
        if (self.budget_tokens is not None or self.budget_usd is not None) and self.model_spec() is None:
            raise ConfigError("a token/USD budget needs a model (--llm)")
        for name in ("llm", "oracle_llm"):
            if getattr(self, name) is not None:
                check_llm_spec(getattr(self, name))
        if self.oracle_llm_record is not None and self.oracle_llm is None:
            raise ConfigError("oracle_llm_record needs an LLM oracle (oracle_llm)")

    def fingerprint(self, dataset_id: str) -> dict[str, Any]:
        """The settings that decide each episode's result (not which episodes, nor how
        many workers run them)."""
        return {"dataset": dataset_id, "agent": self.agent, "agent_config": json.loads(
            json.dumps(dict(self.agent_config), sort_keys=True, default=str)), "seed": self.seed,
            "max_steps": self.max_steps, "success_distance": float(self.success_distance),
            "backend": self.backend, "instruction_view": self.instruction_view, "vlnverse": __version__,
            **self._physics_rate(), **self._extra_fingerprint()}

    def _physics_rate(self) -> dict[str, Any]:
        """The physics rate episodes run at, where a mode steps physics (Tel-Hop does not)."""
        if all(PhysicsConfig(mode=mode).teleports for mode in self.physics):
            return {}
        return {"physics_hz": PhysicsConfig().physics_hz}

    def model_spec(self) -> str | None:
        """The run's model: ``llm``, else the agent config's ``llm`` (None: no model)."""
        configured = self.agent_config.get("llm") if isinstance(self.agent_config, Mapping) else None
        if self.llm is None and isinstance(configured, str) and configured.strip().lower() != "none":
            return configured
        return self.llm

    def _extra_fingerprint(self) -> dict[str, Any]:
        """The models that decide results (backend and model name only: no options, keys
        or URLs) and non-default trace-metric parameters, present only when set, so runs
        without them keep their fingerprint."""
        out: dict[str, Any] = {}
        if self.metrics != MetricsConfig():
            out["metrics"] = json.loads(json.dumps(dataclasses.asdict(self.metrics), default=str))
        if self.renderer != "auto":
            out["renderer"] = self.renderer
        for name in ("llm", "oracle_llm"):
            spec = getattr(self, name)
            if spec is not None:
                described = describe_llm_spec(spec)
                out[name] = f"{described['backend']}:{described['target']}" if described else "none"
        return out


@dataclass
class EvalResult:
    """What :func:`evaluate` did.

    Attributes:
        out: Output folder.
        summary: The ``summary.json`` object.
        records: The selection's records (finished and resumed).
        evaluated: Records produced by this call.
        resumed: Records found finished from an earlier call.
        retried: Error records of an earlier call taken out to run again (``retry_errors``).
        timings: Per evaluated record, its ``timings.jsonl`` line: ``episode_id``, ``physics``,
            ``{"env", "agent", "total", "harness", "waited", "build"}`` seconds and ``built``
            (see :mod:`vlnverse.eval.running.timings`).
        stopped: Why the run stopped before finishing its selection (its LLM budget is
            spent), or None.
    """

    out: Path
    summary: dict[str, Any]
    records: list[dict[str, Any]]
    evaluated: int
    resumed: int
    timings: list[dict[str, Any]] = field(default_factory=list)
    stopped: str | None = None
    retried: int = 0

    @property
    def summary_markdown(self) -> Path:
        return self.out / "summary.md"

    @property
    def index_html(self) -> Path:
        return self.out / "index.html"


def select_episodes(dataset: Any, split: str, task: str, limit: int | None, seed: int) -> list[Any]:
    """The episodes of a run: ``split``/``task`` (``all`` = any), then a seeded sample of
    ``limit`` of them (kept in dataset order)."""
    episodes = dataset.episodes(None if split == "all" else split, None if task == "all" else task)
    if limit is not None and limit < len(episodes):
        keep = np.sort(np.random.default_rng(seed).choice(len(episodes), size=limit, replace=False))
        episodes = [episodes[i] for i in keep]
    return episodes


def plan_items(dataset: Any, episodes: Sequence[Any], physics: Sequence[str], plots: int) -> list[WorkItem]:
    """Work items grouped by scene, then physics mode (a worker loads each scene once);
    the first ``plots`` episodes of every (task, physics) are marked for pictures."""
    plotted: dict[tuple[str, str], int] = {}
    items = []
    scene_files = {}
    for episode in episodes:
        if episode.scene_id not in scene_files:
            scene_files[episode.scene_id] = str(Path(dataset.scene_file(episode)).resolve())
    for mode in physics:
        for episode in episodes:
            group = (episode.task, mode)
            plot = plotted.get(group, 0) < plots
            if plot:
                plotted[group] = plotted.get(group, 0) + 1
            image = str((Path(dataset.root) / episode.reference_image).resolve()) if episode.reference_image else None
            items.append(WorkItem(episode.to_dict(), mode, scene_files[episode.scene_id], image, plot))
    order = {sid: i for i, sid in enumerate(scene_files)}
    return sorted(items, key=lambda it: (order[it.episode["scene_id"]], physics.index(it.physics)))


def _previous_fingerprint(out: Path) -> Any:
    """The fingerprint in ``out``'s run file (None: none, or unreadable)."""
    try:
        return json.loads((out / RUN_FILE).read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None


def llm_features(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """How the run's model calls were served, capability -> modes (the union of the records'
    ``llm.features``; see :attr:`vlnverse.llm.LLMClient.features_used`)."""
    out: dict[str, list[str]] = {}
    for record in records:
        for capability, modes in ((record.get("llm") or {}).get("features") or {}).items():
            out.setdefault(capability, [])
            out[capability] += [m for m in modes if m not in out[capability]]
    return dict(sorted(out.items()))


def _check_run_file(out: Path, fingerprint: dict[str, Any]) -> None:
    """Refuse ``out`` when it holds results of another run. A run file without results (a
    run that stopped before its first episode finished) blocks nothing."""
    path = out / RUN_FILE
    results = out / EPISODES_FILE
    if not (results.is_file() and results.stat().st_size):
        return
    if not path.is_file():
        raise ConfigError(f"{results} exists without {RUN_FILE}; choose another --out")
    try:
        previous = json.loads(path.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if previous != fingerprint:
        changed = sorted(k for k in set(previous or {}) | set(fingerprint)
                         if (previous or {}).get(k) != fingerprint.get(k))
        raise ConfigError(f"{out} holds results of a different run (differs in: {', '.join(changed)}); "
                          "choose another --out or delete it")


def write_reports(out: Path, records: Sequence[Mapping[str, Any]], run: Mapping[str, Any], *,
                  n_boot: int = 1000, seed: int = 0, budget: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write ``summary.json``, ``summary.md`` and ``index.html`` for ``records`` (``budget``:
    the folder's LLM spend and limits, :meth:`~vlnverse.llm.budget.BudgetLedger.report`)."""
    summary = summarize(records, run, n_boot=n_boot, seed=seed, budget=budget)
    write_json_atomic(out / "summary.json", summary)
    # summary.md renders summary.json as written (sorted keys), so `eval verify` can regenerate it
    write_text_atomic(out / "summary.md", summary_markdown(json.loads(json.dumps(summary, sort_keys=True))))
    meta = (f"agent {run.get('label', run.get('agent'))} · dataset {run.get('dataset')} · physics "
            f"{', '.join(run.get('physics', []))} · {len(records)} records · {endings_by_physics(records)}")
    pages = write_episode_pages(out, records)
    write_index(out / "index.html", records, title=f"VLNVerse evaluation — {run.get('label', run.get('agent'))}", meta=meta,
                pages=pages)
    return summary


def on_track(config: EvalConfig, track: Any) -> EvalConfig:
    """``config`` with the selection and scoring of ``track`` (a name or a
    :class:`~vlnverse.eval.tracks.Track`): its splits, tasks, physics modes, step budget,
    success radius and seed replace the config's."""
    from vlnverse.eval.tracks import get_track

    chosen = get_track(track)
    return dataclasses.replace(config, split=",".join(chosen.splits), task=",".join(chosen.tasks),
                               physics=chosen.physics, max_steps=chosen.max_steps,
                               success_distance=chosen.success_distance, seed=chosen.eval_seed)


def evaluate(config: EvalConfig, *, agent: Any = None, track: Any = None,
             on_result: Callable[[dict[str, Any]], None] | None = None,
             on_start: Callable[[int, list[dict[str, Any]]], None] | None = None) -> EvalResult:
    """Run (or finish) the evaluation ``config`` describes and write its reports.

    Args:
        config: The run.
        agent: An agent object to use instead of ``config.agent``'s registry entry
            (``config.agent`` then only labels the run); pickled to pool workers.
        track: A track's name (``"mini"``) or :class:`~vlnverse.eval.tracks.Track`: the run
            takes its selection and scoring (:func:`on_track`); None: the config's own.
        on_result: Called with each new record as it is written (progress display).
        on_start: Called with (total records of the selection, already finished records).

    Raises:
        DatasetError: the dataset cannot be read or the selection is empty.
        ConfigError: invalid settings, a backend that cannot run here, or ``out`` holds a
            different run.
        DependencyNotInstalled: ``executor="ray"`` without Ray.
    """
    from vlnverse.sim.backend import require_backend
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.storage import check_dataset

    if track is not None:
        config = on_track(config, track)
    # everything that can be checked is checked before the output folder is touched
    require_backend(config.backend)
    if config.executor == "ray":
        import_ray()
    dataset = EpisodeDataset.open(config.dataset, scenes_dir=config.scenes_dir)
    if dataset.manifest:
        check_dataset(dataset.root)
    episodes = select_episodes(dataset, config.split, config.task, config.episodes, config.seed)
    if config.episode_ids is not None:
        kept = set(config.episode_ids)
        episodes = [e for e in episodes if e.episode_id in kept]
    items = plan_items(dataset, episodes, config.physics, config.plots)
    out = Path(config.out)
    llm_cache = config.llm_cache
    if llm_cache is None and (config.budget_tokens is not None or config.budget_usd is not None):
        llm_cache = str((out / LLM_CACHE_DIR).resolve())  # a budget-stopped episode resumes from it
    spec = RunSpec(agent=agent if agent is not None else config.agent,
                   agent_config=dict(config.agent_config), seed=config.seed, backend=config.backend,
                   renderer=config.renderer, max_steps=config.max_steps,
                   metrics=dataclasses.replace(config.metrics, success_distance=float(config.success_distance)),
                   plots_dir=str((out / PLOTS_DIR).resolve()) if config.plots else None,
                   viewer_dir=str((out / VIEWER_DIR).resolve()),
                   llm=config.model_spec() if agent is None else config.llm, llm_cache=llm_cache,
                   llm_record=config.llm_record,
                   concurrency=config.concurrency, oracle_llm=config.oracle_llm,
                   oracle_record=config.oracle_llm_record,
                   instruction_view=config.instruction_view, episode_timeout=config.episode_timeout,
                   trace_text_chars=config.trace_text_chars)
    if isinstance(spec.agent, str) and spec.llm is not None and not takes_llm(agent_factory(spec.agent)):
        raise ConfigError(f"agent {spec.agent} does not take a model; drop --llm")
    # The model client is built in the workers only, so the agent is checked without one.
    probe = build_agent(spec)  # an agent object as the workers will see it (a bare policy wrapped)
    privileged = sorted(getattr(probe, "privileged", ()))  # what a fair comparison must know
    settings = agent_settings(probe)
    action_space = json_safe(probe.action_space)  # `eval verify` replays the actions in it
    predictor = getattr(probe, "waypoint_predictor_info", None)  # the LLM agents' candidate source
    training = getattr(probe, "training_data", None)  # what a learned agent's checkpoint trained on
    served = getattr(probe, "server_agent", None)  # a policy server's own name for its agent
    if isinstance(spec.agent, str):
        probe.close()
        if spec.llm is None and getattr(probe, "needs_llm", False):
            raise ConfigError(f"agent {spec.agent} needs a model: pass --llm SPEC (e.g. "
                              "'openai:MODEL?base_url=URL') or set 'llm:' in its --agent-config")
        check_model = getattr(probe, "check_model", None)  # a model the agent cannot run with: refused now
        if callable(check_model) and spec.llm is not None:
            check_model(spec.llm)
    for spec_text in (config.llm, config.oracle_llm):
        if spec_text is not None:
            check_llm_credentials(spec_text)  # the client itself is built in the workers
    prepare_output_dir(out)
    with OutputLock(out):
        return _run(config, spec, items, privileged, settings, on_start, on_result,
                    {"action_space": action_space, "scenes_dir": os.path.normpath(dataset.scenes_dir),
                     "inputs": input_checksums(dataset, [i.scene_file for i in items]),
                     "checkpoints": checkpoint_checksums(config.agent_config),
                     **({"waypoint_predictor": predictor} if predictor is not None else {}),
                     **({"training_data": training} if training is not None else {}),
                     **({"served_agent": served} if served is not None else {})})


def agent_settings(agent: Any) -> dict[str, Any] | None:
    """The agent's resolved settings, defaults included (None: it has no settings object);
    a model spec among them is described as ``run.json`` describes ``llm`` (no secrets)."""
    config = getattr(agent, "config", None)
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return None
    settings = json.loads(json.dumps(dataclasses.asdict(config), sort_keys=True, default=str))
    if isinstance(settings.get("llm"), str):
        settings["llm"] = describe_llm_spec(settings["llm"])
    return settings


def _run(config: EvalConfig, spec: RunSpec, items: list[WorkItem], privileged: list[str],
         settings: dict[str, Any] | None, on_start: Callable[[int, list[dict[str, Any]]], None] | None,
         on_result: Callable[[dict[str, Any]], None] | None, provenance: Mapping[str, Any]) -> EvalResult:
    """The part of :func:`evaluate` that writes, under the output folder's lock (``provenance``:
    the agent's action space, the scenes folder and the checksums of the inputs and of the agent's
    checkpoints, and a policy server's name for its agent, for ``run.json``)."""
    out = Path(config.out)
    dataset_id = os.path.normpath(config.dataset)  # as the user gave it: a relative path stays relative
    fingerprint = config.fingerprint(dataset_id)
    if settings is not None:  # what decides results, defaults included: a changed default is another run
        fingerprint["agent_settings"] = {k: v for k, v in settings.items() if k != "llm"}
    if privileged:
        fingerprint["privileged"] = privileged
    _check_run_file(out, fingerprint)
    remove_stale_temp_files(out)
    ledger = None
    if spec.llm is not None:  # the folder's spend, kept across invocations of the same run
        from vlnverse.llm.budget import BudgetLedger

        ledger = BudgetLedger(out / BUDGET_FILE, max_tokens=config.budget_tokens, max_usd=config.budget_usd)
        if _previous_fingerprint(out) != fingerprint:
            ledger.reset()  # a new run takes the folder
        ledger.spent()  # a damaged ledger is refused here, in one line
    label = config.label or augmented_label(agent_label(config.agent, provenance.get("served_agent")),
                                            provenance.get("training_data"))
    run = {"agent": config.agent, "label": label, "agent_config": fingerprint["agent_config"], "dataset": dataset_id,
           "split": config.split, "task": config.task, "physics": list(config.physics),
           "physics_hz": PhysicsConfig().physics_hz,
           "episodes": config.episodes, "seed": config.seed, "max_steps": config.max_steps,
           "success_distance": float(config.success_distance), "backend": config.backend,
           "instruction_view": config.instruction_view, "concurrency": config.concurrency,
           "episode_timeout": config.episode_timeout, "privileged": privileged, "agent_settings": settings,
           "fallback_warning": config.fallback_warning,
           "trace_metrics": trace_metric_settings(config.metrics),
           **provenance}
    if spec.llm is not None:
        run.update({"llm": describe_llm_spec(spec.llm), "llm_cache": spec.llm_cache,
                    "llm_record": config.llm_record, "budget_tokens": config.budget_tokens,
                    "budget_usd": config.budget_usd})
    if config.oracle_llm is not None:
        run["oracle_llm"] = describe_llm_spec(config.oracle_llm)
        run["oracle_llm_record"] = config.oracle_llm_record
    write_json_atomic(out / RUN_FILE, {"fingerprint": fingerprint, "run": run})
    store = ResultStore(out / EPISODES_FILE)
    wanted = {item.key for item in items}
    retried = 0
    if config.retry_errors:
        retried = store.discard({record_key(r) for r in store.records()
                                 if record_key(r) in wanted and r.get("fail_reason") == "error"})
        if retried:
            logger.info("running %d episode(s) that ended in an error again", retried)
    todo = [item for item in items if item.key not in store]
    finished = [r for r in store.records() if record_key(r) in wanted]
    if on_start:
        on_start(len(items), finished)
    spec = dataclasses.replace(spec, budget=ledger)
    timings: list[dict[str, Any]] = []
    stopped: list[str] = []
    if todo and ledger is not None and (spent := ledger.exhausted()) is not None:
        stopped.append(spent)  # nothing can be called: no episode is started
        todo = []

    def collect(result: WorkResult) -> None:
        if result.record is None:
            if result.stopped and not stopped:
                stopped.append(result.stopped)
                logger.warning("stopping: %s", result.stopped)
            return
        record = result.record
        try:
            appended = store.append(record)
        except (TypeError, ValueError, RecursionError) as exc:  # this episode's error, not the run's end
            record = error_record(record, f"{type(exc).__name__}: {str(exc)[:200]}")
            appended = store.append(record)
        if appended:
            row = timing_row(record, result.timing)
            append_timing(out, row)
            timings.append(row)
            if on_result:
                on_result(record)

    if todo:
        logger.info("evaluating %d item(s) (%d already finished) with %s x%d", len(todo), len(finished),
                    config.executor, config.workers)
        run_items(spec, todo, collect, executor=config.executor, workers=config.workers,
                  ray_address=config.ray_address)
    records = [store.get(key) for key in (item.key for item in items) if key in store]
    features = llm_features(records)
    if features:
        run["llm_features"] = features
        write_json_atomic(out / RUN_FILE, {"fingerprint": fingerprint, "run": run})
    summary = write_reports(out, records, run, n_boot=config.bootstrap, seed=config.seed,
                            budget=ledger.report() if ledger is not None else None)
    return EvalResult(out, summary, records, len(timings), len(finished), timings,
                      stopped[0] if stopped else None, retried)
