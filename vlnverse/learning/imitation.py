"""Offline imitation of the oracle (paper §5.2): teacher forcing on pre-rendered frames.

``train_imitation`` pre-renders the training split if needed (resumable), then trains for
``epochs`` epochs with AdamW (and ``epochs`` more per DAgger round, if any; with ``patience``,
it stops once validation SR has not improved for that many epochs). After every epoch it writes ``checkpoints/epoch_NNN.pt`` and
``checkpoints/latest.pt`` (model, optimizer, RNG states, history), validates the epoch's
checkpoint through the evaluation harness (SR/SPL on ``val_split``), and refreshes the
learning curves (``curves.png``, TensorBoard events in ``tb/``), ``history.json`` and
``agent.yaml`` (the best checkpoint, for ``vlnverse eval --agent KIND --agent-config``).
A re-run with the same config continues after the last finished epoch; since the data order
of every epoch is drawn from its own seed and the RNG states are restored, a run killed and
re-run ends with the weights of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.fileio import atomic_open, write_json_atomic, write_text_atomic
from vlnverse.learning.curves import EpochScalars
from vlnverse.learning.frames import augment_digest
from vlnverse.learning.models import MODEL_KINDS
from vlnverse.learning.models.config import ModelConfig
from vlnverse.learning.prerender import PrerenderConfig, prerender

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest.pt"


@dataclass(frozen=True)
class ImitationConfig:
    """A teacher-forcing run.

    Attributes:
        kind: ``seq2seq``, ``cma`` or ``gama``.
        dataset: Dataset folder.
        out: Output folder.
        split: Training split.
        task: Task(s) to train on, e.g. ``fine`` or ``fine,coarse`` (``None``: every task of the split).
        frames: A pre-rendered frames folder to train on as it is (its resolution wins over
            ``rgb_size``/``depth_size``). ``None``: the split is pre-rendered into ``OUT/frames``
            at ``rgb_size``/``depth_size`` (resuming what is there).
        augment: Augmentation sets (``vlnverse release augment`` folders) trained on beside the
            split: their episodes and frames (``AUG/frames``, which must be stored as the split's
            are). Checkpoints and ``train.json`` name them (:func:`training_data`).
        encoders: Pretrained visual encoders to start from: an ``encoders.pt`` of ``vlnverse
            train encoders`` or a waypoint predictor checkpoint (its depth CNN); it names the
            trunks, so it sets ``model``'s ``rgb_encoder``/``depth_encoder``/``channels``. What it
            was trained on joins the run's ``training_data``.
        epochs: Training epochs.
        patience: Early stopping: stop when ``patience`` epochs in a row did not beat the best
            validation (SR, then SPL) so far (``None``: train every epoch; needs ``val_split``).
        batch_size: Episodes per batch (paper: 2).
        lr: AdamW learning rate (paper: 1e-4).
        weight_decay: AdamW weight decay.
        inflection_weighting: Weight steps where the teacher's action changes by VLN-CE's
            coefficient (steps per inflection of the training data).
        dagger_rounds: DAgger rounds after the teacher-forced one (VLN-CE's DAgger trainer):
            round ``k`` walks the split with the latest policy mixed with the oracle
            (oracle with probability ``dagger_p ** k``), labels every step with the oracle's
            action, adds those walks to the training set and trains ``epochs`` more epochs.
        dagger_p: DAgger's oracle probability base (VLN-CE: 0.75).
        progress_weight: Weight of the progress monitor's loss (VLN-CE's ``alpha``, 1.0 there;
            ``0``: no monitor): the model gets a progress head (``model.progress_monitor``),
            whose squared error against the share of the oracle's route behind each step
            (:func:`~vlnverse.learning.data.route_progress`) joins each step's loss, weighted as
            the step. DAgger's walks carry no target (the oracle did not lead them).
        seed: Seeds initialization, data order and evaluation.
        device: ``cpu``, ``cuda[:N]`` or ``auto``.
        threads: Torch CPU threads for training, per process (``None``: torch's setting when
            training starts, by default every core the process may use; with ``procs`` > 1 the
            cores shared out among the processes); set again every epoch, since validation's
            agent runs on one thread.
        procs: Training processes on this machine (DistributedDataParallel, each its share
            of every global batch; rank 0 pre-renders, validates and writes the files).
            ``None``: one per core the process may use, at most ``batch_size``, on the CPU
            (one process on a GPU). Ignored under ``torchrun``, which starts the processes itself.
        amp: Mixed precision: bfloat16 autocast (CPU, Ampere or newer GPUs), float16 with loss
            scaling on older GPUs (see :class:`~vlnverse.learning.torch_support.MixedPrecision`);
            refused on a CPU without bfloat16 kernels for the model's layers
            (:func:`~vlnverse.learning.torch_support.require_autocast_support`).
        data_parallel: Wrap the model in ``torch.nn.DataParallel`` when several GPUs are visible
            (one process; under ``torchrun`` the processes use DDP, see :mod:`vlnverse.learning.distributed`).
        loader_workers: DataLoader worker processes.
        val_split: Split validated after every epoch (``None``: no validation).
        val_episodes: Validate on a seeded sample of this many episodes (``None``: all).
        val_physics: Physics mode of the validation runs.
        max_steps: Step cap of pre-rendered and validation episodes (paper: 200).
        workers: Processes for pre-rendering and validation.
        rgb_size, depth_size: Resolution of the frames pre-rendered into ``OUT/frames``.
        model: Model hyper-parameters (``kind``/``vocab_size``/sizes are filled in).
    """

    kind: str
    dataset: str
    out: str
    split: str = "train"
    task: str | None = None
    frames: str | None = None
    augment: tuple[str, ...] = ()
    encoders: str | None = None
    epochs: int = 10
    patience: int | None = None
    batch_size: int = 2
    lr: float = 1e-4
    weight_decay: float = 0.01
    inflection_weighting: bool = True
    dagger_rounds: int = 0
    dagger_p: float = 0.75
    progress_weight: float = 0.0
    seed: int = 0
    device: str = "cpu"
    threads: int | None = None
    procs: int | None = 1
    amp: bool = False
    data_parallel: bool = True
    loader_workers: int = 0
    val_split: str | None = "val_unseen"
    val_episodes: int | None = None
    val_physics: str = "tel_hop"
    max_steps: int = 200
    workers: int = 1
    rgb_size: int = 224
    depth_size: int = 256
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ConfigError(f"unknown model {self.kind!r}; valid: {', '.join(MODEL_KINDS)}")
        for name in ("epochs", "batch_size", "max_steps", "workers", "rgb_size", "depth_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.patience is not None:
            if not isinstance(self.patience, int) or isinstance(self.patience, bool) or self.patience < 1:
                raise ConfigError(f"patience must be a positive integer, got {self.patience!r}")
            if not self.val_split:
                raise ConfigError("patience needs a validation split (val_split)")
        if self.procs is not None and (not isinstance(self.procs, int) or isinstance(self.procs, bool)
                                       or not 1 <= self.procs <= self.batch_size):
            raise ConfigError(f"procs must be an integer from 1 to the batch size {self.batch_size}, "
                              f"got {self.procs!r}")
        if not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr!r}")
        if not isinstance(self.dagger_rounds, int) or self.dagger_rounds < 0 or not 0.0 <= self.dagger_p <= 1.0:
            raise ConfigError(f"need dagger_rounds >= 0 and dagger_p in [0, 1], got {self.dagger_rounds!r}, "
                              f"{self.dagger_p!r}")
        if not self.progress_weight >= 0:
            raise ConfigError(f"progress_weight must be >= 0, got {self.progress_weight!r}")
        if self.progress_weight and self.kind == "gama":
            raise ConfigError("the progress monitor (progress_weight) is for seq2seq and cma, not gama")

    @property
    def augment_frames(self) -> list[Path]:
        return [Path(folder) / "frames" for folder in self.augment]

    @property
    def total_epochs(self) -> int:
        """Epochs over all rounds: ``epochs`` teacher-forced, then ``epochs`` per DAgger round."""
        return self.epochs * (1 + self.dagger_rounds)

    @property
    def frames_dir(self) -> Path:
        return Path(self.frames) if self.frames else Path(self.out) / "frames"

    def prerender_config(self, split: str) -> PrerenderConfig:
        return PrerenderConfig(dataset=self.dataset, out=str(self.frames_dir), split=split, task=self.task,
                               rgb_size=self.rgb_size, depth_size=self.depth_size, max_steps=self.max_steps,
                               workers=self.workers)

    def fingerprint(self) -> str:
        """What decides the trained weights (not how many epochs, unless DAgger rounds follow
        them, nor how many DAgger rounds: a run with more rounds extends one with fewer, nor
        where or how fast)."""
        data = config_to_dict(self)
        data["augment"] = [augment_digest(folder) for folder in self.augment]  # moved sets resume
        if not self.augment:
            del data["augment"]  # the fingerprints of runs without augmentation stay
        if self.encoders:  # by content: a moved file resumes
            data["encoders"] = hashlib.sha256(Path(self.encoders).read_bytes()).hexdigest()
        else:
            del data["encoders"]
        data["model"].pop("progress_monitor")  # set by progress_weight
        if not self.progress_weight:
            del data["progress_weight"]  # the fingerprints of runs without the monitor stay
        data["dagger_rounds"] = min(self.dagger_rounds, 1)  # 0 or 1: the fingerprints of one-round runs stay
        if not self.dagger_rounds:
            data.pop("epochs")
        for name in ("out", "frames", "device", "loader_workers", "workers", "val_episodes",
                     "val_split", "val_physics", "amp", "data_parallel", "threads", "procs", "patience"):
            data.pop(name)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class EpochStats:
    """One epoch's figures (a row of ``history.json``)."""

    epoch: int
    loss: float
    accuracy: float
    samples: int
    seconds: float
    val_sr: float | None = None
    val_spl: float | None = None
    checkpoint: str = ""


@dataclass
class ImitationResult:
    """A finished (or resumed-and-finished) run."""

    out: Path
    history: list[EpochStats]
    best: EpochStats | None
    agent_config: Path
    stopped_early: bool = False
    processes: int = 1

    @property
    def samples_per_second(self) -> float:
        seconds = sum(e.seconds for e in self.history)
        return sum(e.samples for e in self.history) / seconds if seconds else 0.0


def train_imitation(config: ImitationConfig, *, progress: Callable[[str, int, int], None] | None = None,
                    on_epoch_end: Callable[[EpochStats], None] | None = None) -> ImitationResult:
    """Train (or finish training) the model ``config`` describes; see the module docs.

    Args:
        config: The run.
        progress: Called with ``(phase, done, total)`` while pre-rendering and per batch.
        on_epoch_end: Called after each epoch's checkpoint is written.

    Raises:
        ConfigError: ``out`` holds a run of another configuration; bad settings.
        DatasetError: the dataset or split is missing.
    """
    from vlnverse.learning.distributed import launched_by_torchrun, local_cores, spawn_ranks
    from vlnverse.learning.torch_support import require_torch, resolve_device

    device = resolve_device(config.device)
    procs = config.procs or (min(local_cores(), config.batch_size) if device.type == "cpu" else 1)
    if procs == 1 or launched_by_torchrun():
        return train_in_group(config, None, progress=progress, on_epoch_end=on_epoch_end)
    if device.type == "cuda" and procs > require_torch().cuda.device_count():
        raise ConfigError(f"--procs {procs} on {config.device}: one GPU per process, and "
                          f"{require_torch().cuda.device_count()} are visible")
    threads = config.threads or max(1, local_cores() // procs)
    return spawn_ranks(procs, threads, train_in_group, dataclasses.replace(config, threads=threads),
                       progress=progress, on_epoch_end=on_epoch_end)


def train_in_group(config: ImitationConfig, place: Any, *, progress: Callable[[str, int, int], None] | None = None,
                   on_epoch_end: Callable[[EpochStats], None] | None = None) -> ImitationResult:
    """:func:`train_imitation` in the process group of ``place`` (a
    :class:`~vlnverse.learning.distributed.Place`; ``None``: torchrun's, or one process)."""
    from vlnverse.learning.distributed import process_group
    from vlnverse.shared_settings import torch_threads

    with process_group(config.device, place) as (group, device), torch_threads(config.threads):
        return _train(config, group, device, progress if group.main else None, on_epoch_end if group.main else None)


def _train(config: ImitationConfig, group: Any, device: Any, progress: Callable[[str, int, int], None] | None,
           on_epoch_end: Callable[[EpochStats], None] | None) -> ImitationResult:
    """:func:`train_imitation` in one process of ``group`` (rank 0 writes the files)."""
    from vlnverse.learning.checkpoints import claim_run, resume, save_checkpoint, training_state
    from vlnverse.learning.data import (
        EpisodeTensors,
        WithGhosts,
        collate,
        inflection_coefficient,
        vocabulary,
    )
    from vlnverse.learning.distributed import GlobalBatches
    from vlnverse.learning.frames import FrameStore
    from vlnverse.learning.models import build_model
    from vlnverse.learning.torch_support import (
        MixedPrecision,
        data_parallel,
        require_autocast_support,
        require_torch,
        seed_everything,
    )

    torch = require_torch()
    out = Path(config.out)
    if config.amp:
        require_autocast_support(build_model(dataclasses.replace(config.model, kind=config.kind)), device)
    if group.main:
        claim_run(out, config.fingerprint(), config)
        if config.frames is None:
            prerender(config.prerender_config(config.split),
                      progress=(lambda s: progress("prerender", s.frames, 0)) if progress else None)
    group.barrier()
    store = FrameStore(config.frames_dir, config.split)
    frames = store.config
    stores = [store, *augmentation_stores(config, frames)]
    vocab = vocabulary(*stores)
    model_config = dataclasses.replace(pretrained_model(config, frames), kind=config.kind, vocab_size=len(vocab["word_list"]),
                                       rgb_size=frames["rgb_size"], depth_size=frames["depth_size"],
                                       progress_monitor=config.progress_weight > 0)
    seed_everything(config.seed)
    model = build_model(model_config).to(device)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                                  weight_decay=config.weight_decay)
    inflection = inflection_coefficient(*stores) if config.inflection_weighting else 1.0
    precision = MixedPrecision(device, config.amp)
    latest = out / CHECKPOINTS / LATEST
    history = [EpochStats(**row) for row in resume(latest, model, optimizer, precision.scaler)]
    if history:
        log.info("resuming %s after epoch %d", out, len(history))
    from vlnverse.learning.models.encoders import TeacherForced

    runner = TeacherForced(model)
    if group.world > 1:
        runner = group.wrap(runner, device)
    elif device.type == "cuda" and config.data_parallel and torch.cuda.device_count() > 1:
        runner = data_parallel(runner, device)
    rounds = [[EpisodeTensors(part, vocab, model_config.max_instruction_tokens) for part in stores]]
    trained_on = training_data(config)  # read once: every checkpoint of the run carries it
    sensors = {name: spec for name, spec in store.sensors.items() if name in ("rgb", "depth")}
    logger = EpochScalars(out, len(history), "imitation", ("loss", "accuracy", "val_sr", "val_spl")) \
        if group.main else None
    try:
        for epoch in range(len(history) + 1, config.total_epochs + 1):
            if stalled(history, config.patience):
                break
            dagger_round = (epoch - 1) // config.epochs
            while len(rounds) <= dagger_round:  # DAgger: aggregate the current policy's walks
                collected = collect_dagger(config, len(rounds), Path(history[-1].checkpoint), frames, group)
                rounds.append([EpisodeTensors(part, vocab, model_config.max_instruction_tokens, oracle_walks=False)
                               for part in collected])
            datasets = [part for parts in rounds for part in parts]
            dataset = WithGhosts(torch.utils.data.ConcatDataset(datasets))
            lengths = [e.length for part in datasets for e in part.store.episodes]
            batches = GlobalBatches(len(dataset), config.batch_size, config.seed * 100_003 + epoch, group, lengths)
            loader = torch.utils.data.DataLoader(dataset, batch_sampler=batches, num_workers=config.loader_workers,
                                                 collate_fn=functools.partial(collate, inflection=inflection))
            total = len(batches)
            stats = _train_epoch(runner, loader, optimizer, precision, device, epoch, group, config.progress_weight,
                                 (lambda done, n=total: progress("train", done, n)) if progress else None)
            path = out / CHECKPOINTS / f"epoch_{epoch:03d}.pt"
            stats.checkpoint = str(path.resolve())
            if group.main:
                payload = {"kind": config.kind, "model_config": config_to_dict(model_config),
                           "vocab": vocab["word_list"], "sensors": sensors, "depth_dtype": frames["depth_dtype"],
                           "model": model.state_dict(), "epoch": epoch, "training_data": trained_on}
                save_checkpoint(payload, path)
                if config.val_split:
                    stats.val_sr, stats.val_spl = validate(config, path, epoch)
            history.append(stats)
            if group.main:
                save_checkpoint({**payload, **training_state(optimizer, [dataclasses.asdict(e) for e in history],
                                                             precision.scaler)}, latest)
                logger.log(stats)
                _write_outputs(out, config, history)
            if on_epoch_end:
                on_epoch_end(stats)
            group.barrier()
    finally:
        if logger:
            logger.close()
    best = best_epoch(history)
    return ImitationResult(out, history, best, out / "agent.yaml",
                           stopped_early=len(history) < config.total_epochs, processes=group.world)


def collect_dagger(config: ImitationConfig, round_index: int, checkpoint: Path, frames: dict[str, Any],
                   group: Any) -> list[Any]:
    """DAgger round ``round_index``: walk the split (and each augmentation set's episodes) mixing
    the oracle (probability ``dagger_p ** round_index``) with the policy of ``checkpoint``,
    labelled by the oracle; stored (resumably) in the run's own ``OUT/dagger_NN`` (an augmentation
    set's in ``OUT/dagger_NN_augK``) by rank 0 of ``group`` (not beside the shared frames: two runs
    on one ``FRAMES`` folder would overwrite each other's walks)."""
    from vlnverse.learning.frames import FrameStore

    walks = [(config.dataset, config.split, config.task, f"dagger_{round_index:02d}")]
    walks += [(str(Path(folder) / "dataset"), "train", None, f"dagger_{round_index:02d}_aug{k}")
              for k, folder in enumerate(config.augment)]
    collects = [PrerenderConfig(dataset=dataset, out=str(Path(config.out) / name), split=split, task=task,
                                rgb_size=frames["rgb_size"], depth_size=frames["depth_size"],
                                depth_dtype=frames["depth_dtype"], max_steps=config.max_steps,
                                physics=frames.get("physics", "tel_hop"), workers=config.workers,
                                policy=str(checkpoint), beta=config.dagger_p ** round_index, seed=config.seed)
                for dataset, split, task, name in walks]
    if group.main:
        for collect in collects:
            prerender(collect)
    group.barrier()
    return [FrameStore(collect.out, collect.split) for collect in collects]


def training_data(config: ImitationConfig) -> dict[str, Any]:
    """What a model trained on: the dataset (its manifest's config hash), split and tasks, and
    each augmentation set (track, homes, episodes, digest). Saved in every checkpoint."""
    manifest = json.loads((Path(config.dataset) / "manifest.json").read_text(encoding="utf-8"))
    augment = []
    for folder in config.augment:
        facts = json.loads((Path(folder) / "augment.json").read_text(encoding="utf-8"))
        augment.append({"track": facts["track"], "first": facts["first"], "homes": facts["homes"],
                        "episodes": sum(facts["episodes"].values()), "sha256": augment_digest(folder)})
    data = {"dataset_config_hash": manifest.get("config_hash"), "split": config.split, "task": config.task,
            "augment": augment}
    if config.encoders:
        from vlnverse.learning.encoder_file import encoder_settings

        data["encoders"] = encoder_settings(config.encoders)["data"]
    return data


def pretrained_model(config: ImitationConfig, frames: dict[str, Any]) -> ModelConfig:
    """``config.model`` with the trunks and weights of ``config.encoders`` (unchanged without).

    Raises:
        ConfigError: the encoders were pretrained on frames of another resolution.
    """
    if not config.encoders:
        return config.model
    from vlnverse.learning.encoder_file import encoder_settings

    settings = encoder_settings(config.encoders)
    for key, size in settings.get("frames", {}).items():
        if frames.get(key) != size:
            raise ConfigError(f"encoders {config.encoders} were pretrained on {key} {size}, the training frames "
                              f"have {frames.get(key)}")
    return dataclasses.replace(config.model, **settings["model"])


def augmentation_stores(config: ImitationConfig, frames: dict[str, Any]) -> list[Any]:
    """The frame stores of the augmentation sets, each checked to hold frames stored as ``frames`` are.

    Raises:
        ConfigError: a set without frames, or with frames of another resolution, precision or physics.
    """
    from vlnverse.learning.frames import FrameStore

    stores = []
    keys = ("rgb_size", "depth_size", "depth_dtype", "physics", "max_steps")
    for folder, root in zip(config.augment, config.augment_frames, strict=True):
        augment_digest(folder)
        if not (root / "train" / "prerender.json").is_file():
            raise ConfigError(f"augmentation set {folder} has no frames; build it without --no-frames")
        store = FrameStore(root, "train")
        theirs = {key: store.config.get(key) for key in keys}
        ours = {key: frames.get(key) for key in keys}
        if theirs != ours:
            raise ConfigError(f"augmentation set {folder} holds frames stored as {theirs}, the training frames as "
                              f"{ours}; rebuild it with matching --rgb-size/--depth-size/--max-steps")
        stores.append(store)
    return stores


def _train_epoch(model: Any, loader: Any, optimizer: Any, precision: Any, device: Any, epoch: int,
                 group: Any, progress_weight: float, progress: Callable[[int], None] | None) -> EpochStats:
    from vlnverse.learning.torch_support import require_torch

    torch = require_torch()
    model.train()
    started = time.perf_counter()
    total_loss = total_weight = correct = count = 0.0
    for done, batch in enumerate(loader, start=1):
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        with precision.autocast():
            outputs = teacher_forced(model, batch)
            logits = outputs.logits
            losses = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), batch["actions"].flatten(),
                                                       reduction="none")
            if outputs.residual is not None:  # GAMA: the residual's squared error, weighted as the steps
                from vlnverse.learning.models.gama import RESIDUAL_WEIGHT, residual_targets

                error = (outputs.residual.float() - residual_targets(batch["actions"], batch["motion"])).pow(2).sum(-1)
                losses = losses + RESIDUAL_WEIGHT * error.flatten()
            if outputs.progress is not None:  # the progress monitor's squared error, weighted as the steps
                losses = losses + progress_weight * progress_errors(outputs.progress, batch["progress"]).flatten()
            weights = batch["weights"].flatten()
            # the global batch's weighted mean (DDP averages the processes' gradients)
            loss = (losses * weights).sum() * (group.world / group.sum([float(weights.sum())])[0])
        precision.step(loss, optimizer)
        mask = batch["weights"] > 0  # the real steps, a ghost's left out
        total_loss += float((losses * weights).sum().detach())
        total_weight += float(weights.sum())
        correct += float(((logits.argmax(-1) == batch["actions"]) & mask).sum())
        count += float(mask.sum())
        if progress:
            progress(done)
    total_loss, total_weight, correct, count = group.sum([total_loss, total_weight, correct, count])
    return EpochStats(epoch, total_loss / max(total_weight, 1e-9), correct / max(count, 1.0), int(count),
                      time.perf_counter() - started)


def teacher_forced(runner: Any, batch: dict[str, Any]) -> Any:
    """The :class:`~vlnverse.learning.models.encoders.Decoded` outputs of whole padded episodes under teacher
    forcing (``runner``: a :class:`~vlnverse.learning.models.encoders.TeacherForced`, possibly in
    ``DataParallel`` or DDP)."""
    return runner(batch["tokens"], batch["rgb"], batch["depth"], batch["prev_actions"], batch["mask"])


def progress_errors(estimate: Any, target: Any) -> Any:
    """Squared error (B, T) of progress estimates against their targets; 0 where a step has no target (NaN)."""
    from vlnverse.learning.torch_support import require_torch

    torch = require_torch()
    known = ~torch.isnan(target)
    return torch.where(known, estimate.float() - torch.nan_to_num(target), torch.zeros_like(target)).pow(2)


def validate(config: ImitationConfig, checkpoint: Path, epoch: int) -> tuple[float, float]:
    """SR and SPL of ``checkpoint`` on the validation split, through the eval harness."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    result = evaluate(EvalConfig(
        dataset=config.dataset, out=str(Path(config.out) / "val" / f"epoch_{epoch:03d}"), agent=config.kind,
        agent_config={"checkpoint": str(checkpoint.resolve()), "device": "cpu"}, split=config.val_split,
        task=config.task or "all", physics=(config.val_physics,), episodes=config.val_episodes, seed=config.seed,
        max_steps=config.max_steps, plots=0, bootstrap=1, workers=config.workers))
    rows = [r["metrics"] for r in result.records if r.get("metrics")]
    if not rows:
        return 0.0, 0.0
    return (sum(float(r["SR"]) for r in rows) / len(rows), sum(float(r["SPL"]) for r in rows) / len(rows))


def stalled(history: list[EpochStats], patience: int | None) -> bool:
    """Whether the last ``patience`` epochs all failed to beat the best validation (SR, SPL) before them."""
    if patience is None or len(history) <= patience:
        return False
    best = max((e.val_sr or 0.0, e.val_spl or 0.0) for e in history[:-patience])
    return all((e.val_sr or 0.0, e.val_spl or 0.0) <= best for e in history[-patience:])


def best_epoch(history: list[EpochStats]) -> EpochStats | None:
    """The best epoch: highest validation SR, then SPL, then the latest (last epoch without validation)."""
    if not history:
        return None
    return max(reversed(history), key=lambda e: (e.val_sr or 0.0, e.val_spl or 0.0))


def _write_outputs(out: Path, config: ImitationConfig, history: list[EpochStats]) -> None:
    write_json_atomic(out / "history.json", [dataclasses.asdict(e) for e in history])
    best = best_epoch(history)
    agent = {"checkpoint": best.checkpoint, "device": "cpu"}
    write_text_atomic(out / "agent.yaml", f"# vlnverse eval --agent {config.kind} --agent-config {out / 'agent.yaml'}\n"
                      f"# best epoch {best.epoch} (val SR {best.val_sr}, SPL {best.val_spl})\n"
                      + yaml.safe_dump(agent, sort_keys=True))
    rounds = {0: "", 1: " + 1 DAgger round"}.get(config.dagger_rounds, f" + {config.dagger_rounds} DAgger rounds")
    figure = curves_figure(history, title=f"{config.out}: {config.kind} imitation{rounds}",
                           dagger_starts=[config.epochs * k for k in range(1, config.dagger_rounds + 1)])
    with atomic_open(out / "curves.png", "wb") as handle:
        figure.savefig(handle, format="png", dpi=90)


def curves_figure(history: list[EpochStats], title: str, dagger_starts: Sequence[int] = ()) -> Any:
    """Loss, step accuracy and validation SR/SPL per epoch (a :class:`matplotlib.figure.Figure`),
    titled with the run's name; a dashed line after each epoch of ``dagger_starts`` marks where a
    DAgger round begins."""
    from matplotlib.figure import Figure

    epochs = [e.epoch for e in history]
    fig = Figure(figsize=(9, 3.5))
    axes = fig.subplots(1, 2)
    axes[0].plot(epochs, [e.loss for e in history], marker="o", label="loss")
    axes[0].plot(epochs, [e.accuracy for e in history], marker="s", label="step accuracy")
    axes[0].set_xlabel("epoch")
    axes[0].legend()
    if any(e.val_sr is not None for e in history):
        axes[1].plot(epochs, [100 * (e.val_sr or 0) for e in history], marker="o", label="val SR %")
        axes[1].plot(epochs, [100 * (e.val_spl or 0) for e in history], marker="s", label="val SPL %")
        axes[1].legend()
    axes[1].set_xlabel("epoch")
    for index, epoch in enumerate(e for e in dagger_starts if epochs and e < epochs[-1]):
        for ax in axes:
            ax.axvline(epoch + 0.5, color="grey", linestyle="--", linewidth=1)
        axes[1].text(epoch + 0.55, 0.03, f"DAgger {index + 1}", transform=axes[1].get_xaxis_transform(),
                     fontsize=8, color="grey", va="bottom")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
