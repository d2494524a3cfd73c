"""``vlnverse train waypoint_bert --online``: imitation in the simulator with scheduled sampling.

Each iteration plays a batch of episodes (by default one per vector sub-env; with a larger
``batch_size`` each sub-env plays its share in turn), each for at most ``max_traj_len`` steps. At
every step the policy scores the candidates and STOP; the loss is the cross-entropy to the
oracle's choice (paper §5.5, Eq. 1) summed over the steps; the action executed is the
oracle's with probability ``p`` and the policy's otherwise (scheduled sampling; ``p =
schedule_ratio ** (1 + epoch // decay_time)``, an epoch being one pass over the split's
episodes: the paper's SCHEDULE_RATIO 0.85 and DECAY_TIME 4). One AdamW step follows each iteration (the paper's batch of 4 episodes,
``batch_size``, by default one per sub-env). ``checkpoints/iter_NNNN.pt`` are written every ``checkpoint_every``
iterations and ``latest.pt`` with them (a re-run resumes there). The zero-shot (initial)
and the fine-tuned policy are then evaluated through the eval harness on ``eval_split``:
``table7.md``/``table7.json`` hold TL, NE, SR, OSR, SPL, nDTW and CR of both (Table 7).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.agents.config import WAYPOINT_PREDICTORS, PanoramaConfig, WaypointConfig
from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.fileio import write_json_atomic, write_text_atomic
from vlnverse.learning.online.inputs import InputSpec
from vlnverse.learning.online.policy import WaypointBertConfig
from vlnverse.learning.online.rollout import make_vector_env, rollout

log = logging.getLogger(__name__)

TABLE7_COLUMNS = ("TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR")


@dataclass(frozen=True)
class OnlineConfig:
    """An online fine-tuning run.

    Attributes:
        dataset, out, split, task: Data and output folder.
        iterations: Training iterations (one batch of episodes each).
        num_envs: Vector sub-envs.
        batch_size: Episodes per batch (``None``: ``num_envs``); more than ``num_envs``
            keeps the sub-envs busy (each plays its share of the batch in turn).
        vector: ``async`` (a process per sub-env), ``sync`` or ``ray`` (a Ray actor per sub-env).
        ray_address: The Ray cluster of ``vector="ray"`` (``None``: a local instance).
        physics: Physics of the training rollouts (``slide``, ``tel_hop``, ``strict``).
        max_traj_len: Decisions per episode (paper A.2.4: 35).
        lr: AdamW learning rate.
        schedule_ratio, decay_time: Scheduled sampling (see the module docs).
        seed: Seeds initialization, episode order and sampling.
        device: Torch device.
        image_size, views: The panorama the policy sees.
        waypoints: The candidate generator's settings.
        waypoint_predictor: The candidate generator: ``learned`` (the shipped trained
            predictor, as the paper's pre-trained one; A.2.4) or ``depth``.
        init_checkpoint: Start from this checkpoint (the "pre-trained" policy); None: random init.
        checkpoint_every: Iterations between checkpoints.
        eval_split: Split of the zero-shot vs fine-tuned evaluation (None: skip).
        eval_episodes: Evaluate a sample of this many episodes.
        eval_physics: Physics modes of the evaluation.
        model: The policy's hyper-parameters (``vocab_size``/``image_size`` are filled in).
    """

    dataset: str
    out: str
    split: str = "train"
    task: str | None = None
    iterations: int = 10
    num_envs: int = 2
    batch_size: int | None = None
    vector: str = "async"
    ray_address: str | None = None
    physics: str = "slide"
    max_traj_len: int = 35
    lr: float = 1e-4
    schedule_ratio: float = 0.85
    decay_time: int = 4
    seed: int = 0
    device: str = "cpu"
    image_size: int = 32
    views: int = 12
    waypoints: WaypointConfig = field(default_factory=WaypointConfig)
    waypoint_predictor: str = "learned"
    init_checkpoint: str | None = None
    checkpoint_every: int = 1
    eval_split: str | None = "val_unseen"
    eval_episodes: int | None = None
    eval_physics: tuple[str, ...] = ("slide",)
    model: WaypointBertConfig = field(default_factory=WaypointBertConfig)

    def __post_init__(self) -> None:
        for name in ("iterations", "num_envs", "max_traj_len", "decay_time", "image_size", "views",
                     "checkpoint_every", "batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.batch < self.num_envs:
            raise ConfigError(f"batch_size {self.batch} is below num_envs {self.num_envs} (one episode per sub-env)")
        if not 0.0 <= self.schedule_ratio <= 1.0:
            raise ConfigError(f"schedule_ratio must be in [0, 1], got {self.schedule_ratio!r}")
        if self.waypoint_predictor not in WAYPOINT_PREDICTORS:
            raise ConfigError(f"waypoint_predictor must be one of {WAYPOINT_PREDICTORS}, got {self.waypoint_predictor!r}")
        object.__setattr__(self, "eval_physics", tuple(self.eval_physics))

    @property
    def batch(self) -> int:
        return self.batch_size or self.num_envs

    @property
    def spec(self) -> InputSpec:
        return InputSpec(PanoramaConfig(views=self.views, image_size=self.image_size), self.waypoints,
                         self.model.max_tokens, self.waypoint_predictor)

    def fingerprint(self) -> str:
        """What decides the weights (not how many iterations, nor where, how fast or how evaluated)."""
        data = config_to_dict(self)
        for name in ("iterations", "out", "device", "vector", "ray_address", "checkpoint_every", "eval_split", "eval_episodes",
                     "eval_physics"):
            data.pop(name)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def teacher_probability(self, iteration: int, episodes: int) -> float:
        """Probability of executing the oracle's choice at ``iteration`` (1-based) of a split
        of ``episodes`` episodes (the decay counts epochs, as the paper's DECAY_TIME)."""
        epoch = (iteration - 1) * self.batch // max(episodes, 1)
        return self.schedule_ratio ** (1 + epoch // self.decay_time)


@dataclass
class IterationStats:
    """One iteration (a row of ``history.json``)."""

    iteration: int
    loss: float
    teacher_probability: float
    episodes: int
    successes: int
    env_steps: int
    seconds: float


class ScheduledSampling:
    """The learner in a rollout: scores each step, accumulates the imitation loss, and executes
    the oracle's choice with probability ``p`` (else its own argmax)."""

    def __init__(self, model: Any, device: Any, p_teacher: float, rng: np.random.Generator) -> None:
        from vlnverse.learning.torch_support import require_torch

        self.torch = require_torch()
        self.model, self.device, self.p, self.rng = model, device, p_teacher, rng
        self.losses: list[Any] = []

    def _tensors(self, observations: dict[str, np.ndarray]) -> dict[str, Any]:
        return {k: self.torch.as_tensor(np.asarray(v)).to(self.device) for k, v in observations.items()}

    def begin(self, observations: dict[str, np.ndarray], rows: np.ndarray) -> None:
        """Encode the instructions of the episodes starting in ``rows``; their state starts afresh."""
        tokens = self._tensors(observations)["tokens"]
        if len(rows) == len(tokens):
            self.instruction = self.model.encode_instruction(tokens)
            self.state = self.model.initial_state(self.instruction)
            return
        index = self.torch.as_tensor(rows, device=self.device)
        features, padding = self.model.encode_instruction(tokens[index])
        self.state = self.state.index_copy(0, index, self.model.initial_state((features, padding)))
        self.instruction = (self.instruction[0].index_copy(0, index, features),
                            self.instruction[1].index_copy(0, index, padding))

    def act(self, observations: dict[str, np.ndarray], info: dict[str, Any], done: np.ndarray) -> np.ndarray:
        torch = self.torch
        logits, self.state = self.model(self.instruction, self._tensors(observations), self.state)
        teacher = np.asarray(info["teacher"], dtype=np.int64)
        learn = (~done) & (teacher >= 0)
        if learn.any():
            rows = torch.as_tensor(np.flatnonzero(learn), device=self.device)
            targets = torch.as_tensor(teacher[learn], device=self.device)
            self.losses.append(torch.nn.functional.cross_entropy(logits[rows], targets, reduction="sum"))
        predicted = logits.detach().argmax(-1).cpu().numpy()
        use_teacher = self.rng.random(len(teacher)) < self.p
        return np.where(use_teacher, np.maximum(teacher, 0), predicted)


def train_online(config: OnlineConfig, *, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Fine-tune (or finish fine-tuning) and evaluate; returns the run summary (see the module docs)."""
    from vlnverse.learning.checkpoints import claim_run, resume, save_checkpoint, training_state
    from vlnverse.learning.online.policy import WaypointBert
    from vlnverse.learning.torch_support import require_torch, resolve_device, seed_everything
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.formats.vocab import build_vocab
    from vlnverse.weights import load_weights

    torch = require_torch()
    out = Path(config.out)
    claim_run(out, config.fingerprint(), config)
    episodes = EpisodeDataset.open(config.dataset).episodes(config.split, config.task)
    vocab = build_vocab(e.instruction.text for e in episodes)
    device = resolve_device(config.device)
    seed_everything(config.seed)
    model_config = dataclasses.replace(config.model, vocab_size=len(vocab["word_list"]), image_size=config.image_size)
    model = WaypointBert(model_config).to(device)
    if config.init_checkpoint:
        model.load_state_dict(load_weights(config.init_checkpoint, map_location=device)["model"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    meta = {"model_config": config_to_dict(model_config), "vocab": vocab["word_list"],
            "spec": {"panorama": config_to_dict(config.spec.panorama), "waypoints": config_to_dict(config.waypoints),
                     "max_tokens": model_config.max_tokens, "predictor": config.waypoint_predictor}}
    latest = out / "checkpoints" / "latest.pt"
    zero_shot = out / "checkpoints" / "iter_0000.pt"
    if not zero_shot.is_file():  # the initial policy, before any resumed state
        save_checkpoint({**meta, "model": model.state_dict(), "iteration": 0}, zero_shot)
    history = [IterationStats(**row) for row in resume(latest, model, optimizer)]
    order = np.random.default_rng(config.seed).permutation(len(episodes))
    vec = make_vector_env(config.vector, config.num_envs, dataset=config.dataset, split=config.split,
                          task=config.task, physics=config.physics, spec=config.spec,
                          vocab=vocab["stoi"], max_steps=config.max_traj_len, ray_address=config.ray_address)
    try:
        for iteration in range(len(history) + 1, config.iterations + 1):
            model.train()
            learner = ScheduledSampling(model, device, config.teacher_probability(iteration, len(episodes)),
                                        np.random.default_rng([config.seed, iteration]))
            picks = [order[((iteration - 1) * config.batch + r) % len(order)] for r in range(config.batch)]
            stats = rollout(vec, learner, picks, config.max_traj_len)
            loss = torch.stack(learner.losses).sum() / max(stats.env_steps, 1) if learner.losses else None
            if loss is not None:
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            history.append(IterationStats(iteration, float(loss.detach()) if loss is not None else 0.0, learner.p,
                                          stats.episodes, stats.successes, stats.env_steps, stats.seconds))
            if iteration % config.checkpoint_every == 0 or iteration == config.iterations:
                save_checkpoint({**meta, "model": model.state_dict(), "iteration": iteration},
                                out / "checkpoints" / f"iter_{iteration:04d}.pt")
                save_checkpoint({**meta, "model": model.state_dict(),
                                 **training_state(optimizer, [dataclasses.asdict(h) for h in history])}, latest)
            if progress:
                progress(iteration, config.iterations)
    finally:
        vec.close()
    write_json_atomic(out / "history.json", [dataclasses.asdict(h) for h in history])
    final = out / "checkpoints" / f"iter_{config.iterations:04d}.pt"
    write_text_atomic(out / "agent.yaml", f"checkpoint: {final.resolve()}\ndevice: cpu\n")
    summary = {"out": str(out), "iterations": len(history), "agent_config": str(out / "agent.yaml"),
               "env_steps_per_second": sum(h.env_steps for h in history) / max(sum(h.seconds for h in history), 1e-9),
               "history": [dataclasses.asdict(h) for h in history]}
    if config.eval_split:
        summary["table7"] = table7(config, {"Zero-shot": zero_shot, f"Fine-tuned ({config.iterations} it.)": final})
    return summary


def table7(config: OnlineConfig, checkpoints: dict[str, Path]) -> dict[str, Any]:
    """Evaluate each checkpoint through the eval harness; write ``table7.md``/``.json``."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    rows: dict[str, dict[str, float]] = {}
    for label, checkpoint in checkpoints.items():
        name = checkpoint.stem
        result = evaluate(EvalConfig(
            dataset=config.dataset, out=str(Path(config.out) / "eval" / name), agent="waypoint_bert",
            agent_config={"checkpoint": str(checkpoint.resolve()), "device": "cpu"}, split=config.eval_split,
            task=config.task or "all", physics=config.eval_physics, episodes=config.eval_episodes,
            seed=config.seed, max_steps=config.max_traj_len, plots=0, bootstrap=1))
        metrics = [r["metrics"] for r in result.records if r.get("metrics")]
        rows[label] = {c: float(np.mean([m[c] for m in metrics if m.get(c) is not None])) if metrics else float("nan")
                       for c in TABLE7_COLUMNS}
        rows[label]["episodes"] = len(metrics)
    percent = {"SR", "OSR", "SPL", "nDTW", "CR"}
    lines = ["| VLN-BERT-lite | " + " | ".join(TABLE7_COLUMNS) + " |", "|---" * (len(TABLE7_COLUMNS) + 1) + "|"]
    for label, row in rows.items():
        cells = [f"{row[c] * (100 if c in percent else 1):.2f}" for c in TABLE7_COLUMNS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    out = Path(config.out)
    write_text_atomic(out / "table7.md", "\n".join(lines) + "\n")
    write_json_atomic(out / "table7.json", json.loads(json.dumps(rows)))
    return rows
