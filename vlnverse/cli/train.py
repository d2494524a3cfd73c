"""``vlnverse train``: imitation of the oracle offline (Seq2Seq, CMA on pre-rendered frames)
and online (``waypoint_bert --online``: a waypoint policy fine-tuned in the simulator)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from vlnverse.cli.output import print_json, print_table

MODELS = ("seq2seq", "cma", "gama", "waypoint_bert", "waypoints", "encoders")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a learned baseline (Seq2Seq/CMA imitation, online waypoint fine-tuning) or the waypoint predictor",
        description="seq2seq/cma/gama: teacher-forced imitation of the oracle on pre-rendered frames (rendered "
                    "first when missing). waypoint_bert --online: imitation in the simulator with scheduled "
                    "sampling, then zero-shot vs fine-tuned evaluation (Table 7). waypoints: the LLM agents' waypoint "
                    "predictor (depth panorama -> heatmap), on depth panoramas rendered from the dataset's scenes "
                    "with targets from their navigable maps. encoders: visual encoders for seq2seq/cma/gama "
                    "(--encoders), pretrained on pre-rendered frames (RGB -> depth) and the waypoint predictor's "
                    "depth CNN. Re-running resumes (encoders: starts over).")
    parser.add_argument("model", choices=MODELS, help="model to train")
    parser.add_argument("--dataset", type=Path, default=None, help="dataset folder (required but for encoders)")
    parser.add_argument("--split", default="train", help="training split (default: train)")
    parser.add_argument("--task", default=None,
                        help="only these tasks, comma-separated, e.g. fine,coarse (default: every task of the split)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--preset", choices=("smoke", "cpu", "paper"), default="smoke",
                        help="smoke (CPU minutes), cpu (the smoke models to convergence, early stopping) or "
                             "paper (the paper's settings); default smoke")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default: the preset's)")
    parser.add_argument("--patience", type=int, default=None,
                        help="stop after N epochs without a better val SR (default: the preset's; 0: never)")
    parser.add_argument("--batch-size", type=int, default=None, help="episodes per batch (default: the preset's)")
    parser.add_argument("--lr", type=float, default=None, help="AdamW learning rate (default: the preset's)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (default: cpu)")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision (bfloat16 autocast; float16 + loss scaling on GPUs without bfloat16; "
                             "refused on a CPU without bfloat16 kernels for the model's layers)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads of each training process (default: the preset's)")
    parser.add_argument("--procs", default=None, metavar="N",
                        help="training processes on this machine, data parallel (rank 0 validates and writes); "
                             "'auto': one per core, at most the batch size (default: the preset's)")
    parser.add_argument("--frames", type=Path, default=None, help="pre-rendered frames folder (default: OUT/frames)")
    parser.add_argument("--augment", type=Path, action="append", default=[], metavar="AUG",
                        help="also train on this augmentation set (`vlnverse release augment`; repeatable); "
                             "results are labelled +aug")
    parser.add_argument("--val-split", default=None,
                        help="split(s) validated every epoch, e.g. val_seen,val_unseen ('none': skip; default: the "
                             "preset's, else val_unseen)")
    parser.add_argument("--val-episodes", type=int, default=None, help="validate on a sample of N episodes")
    parser.add_argument("--no-inflection", action="store_true", help="no inflection weighting of the loss")
    parser.add_argument("--encoders", type=Path, default=None, metavar="PT",
                        help="start the visual encoders from this file: `vlnverse train encoders`' encoders.pt, or a "
                             "waypoint predictor checkpoint (its depth CNN); results are labelled +aug")
    parser.add_argument("--freeze-encoders", action="store_true", help="keep the --encoders weights fixed")
    parser.add_argument("--progress-monitor", type=float, default=0.0, metavar="WEIGHT",
                        help="train a progress head beside the actions, its loss weighted by WEIGHT (VLN-CE: 1.0; "
                             "default 0: none; seq2seq and cma)")
    parser.add_argument("--dagger", type=int, default=0, metavar="ROUNDS",
                        help="DAgger rounds after teacher forcing (each: collect with the policy, train --epochs)")
    parser.add_argument("--workers", type=int, default=1, help="processes for pre-rendering and validation")
    parser.add_argument("--loader-workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    online = parser.add_argument_group("online fine-tuning (waypoint_bert)")
    online.add_argument("--online", action="store_true", help="train in the simulator (required for waypoint_bert)")
    online.add_argument("--iterations", type=int, default=None, help="iterations (default: the preset's)")
    online.add_argument("--num-envs", type=int, default=None,
                        help="vector sub-envs (default: the preset's; --batch-size: episodes per batch, default one per sub-env)")
    online.add_argument("--vector", choices=("async", "sync"), default="async", help="sub-envs in processes or not")
    online.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="sub-envs on this machine (--vector) or as Ray actors (needs the 'ray' extra)")
    online.add_argument("--ray-address", default=None, help="Ray cluster address (default: a local Ray instance)")
    online.add_argument("--physics", default="slide", help="physics of the rollouts (default: slide)")
    online.add_argument("--eval-physics", default="slide,strict,tel_hop",
                        help="physics of the zero-shot vs fine-tuned evaluation (default: slide,strict,tel_hop)")
    online.add_argument("--waypoint-predictor", choices=("learned", "depth"), default="learned",
                        help="candidate waypoints: the shipped trained predictor (default, as the paper) or depth free space")
    online.add_argument("--init-checkpoint", type=Path, default=None, help="start from this policy checkpoint")
    pretraining = parser.add_argument_group("encoder pretraining (encoders; --frames is the track's frames)")
    pretraining.add_argument("--depth-trunk", choices=("waypoints", "cnn"), default="waypoints",
                             help="depth encoder: the waypoint predictor's CNN (default) or untrained")
    pretraining.add_argument("--waypoint-checkpoint", type=Path, default=None,
                             help="waypoint predictor checkpoint for --depth-trunk waypoints (default: the shipped one)")
    pretraining.add_argument("--frame-stride", type=int, default=None,
                             help="every Nth frame of each home (default 2)")
    pretraining.add_argument("--held-out-homes", type=int, default=None,
                             help="homes of the last frame set held out for validation (default 2)")
    predictor = parser.add_argument_group("waypoint predictor (waypoints)")
    predictor.add_argument("--poses-per-scene", type=int, default=None,
                           help="rendered poses per training scene (default 400; a quarter per validation scene)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON summary")
    parser.set_defaults(handler=_train)


def build_config(args: argparse.Namespace):
    """The :class:`ImitationConfig` of the preset with the command line's overrides."""
    from vlnverse.config import config_from_mapping
    from vlnverse.learning.imitation import ImitationConfig
    from vlnverse.learning.presets import preset

    data = preset(args.preset)
    data.update(kind=args.model, dataset=str(args.dataset), out=str(args.out), split=args.split, task=args.task,
                device=args.device, amp=args.amp, workers=args.workers, loader_workers=args.loader_workers,
                seed=args.seed, inflection_weighting=not args.no_inflection, dagger_rounds=args.dagger,
                progress_weight=args.progress_monitor,
                val_split=_val_split(args, data.get("val_split", "val_unseen")),
                augment=[str(folder) for folder in args.augment],
                encoders=str(args.encoders) if args.encoders else None)
    if args.freeze_encoders:
        if not args.encoders:
            from vlnverse.errors import ConfigError

            raise ConfigError("--freeze-encoders needs --encoders")
        data["model"]["freeze_encoders"] = True
    if args.procs is not None:
        data["procs"] = None if args.procs == "auto" else _count("--procs", args.procs)
    for name in ("epochs", "batch_size", "lr", "val_episodes", "frames", "threads"):
        value = getattr(args, name)
        if value is not None:
            data[name] = str(value) if isinstance(value, Path) else value
    if args.patience is not None:
        data["patience"] = args.patience or None
    elif data["val_split"] is None:  # the preset's early stopping needs validation; --val-split none drops it
        data.pop("patience", None)
    return config_from_mapping(ImitationConfig, data, where="train")


def build_online_config(args: argparse.Namespace):
    """The :class:`OnlineConfig` of the online preset with the command line's overrides."""
    from vlnverse.config import config_from_mapping
    from vlnverse.learning.online.trainer import OnlineConfig
    from vlnverse.learning.presets import preset

    data = preset(args.preset, online=True)
    data.update(dataset=str(args.dataset), out=str(args.out), split=args.split, task=args.task, device=args.device,
                seed=args.seed, vector="ray" if args.executor == "ray" else args.vector,
                ray_address=args.ray_address, physics=args.physics,
                eval_physics=tuple(p.strip() for p in args.eval_physics.split(",") if p.strip()),
                eval_split=_val_split(args),
                waypoint_predictor=args.waypoint_predictor)
    for name, value in (("iterations", args.iterations), ("num_envs", args.num_envs), ("lr", args.lr),
                        ("batch_size", args.batch_size),
                        ("eval_episodes", args.val_episodes), ("init_checkpoint", args.init_checkpoint)):
        if value is not None:
            data[name] = str(value) if isinstance(value, Path) else value
    return config_from_mapping(OnlineConfig, data, where="train")


def _train_online(args: argparse.Namespace) -> int:
    from vlnverse.learning.online.trainer import train_online

    if args.threads:
        from vlnverse.learning.torch_support import require_torch

        require_torch().set_num_threads(args.threads)
    summary = train_online(build_online_config(args))
    if args.json:
        print_json(summary)
        return 0
    rows = [(h["iteration"], h["loss"], h["teacher_probability"], f"{h['successes']}/{h['episodes']}",
             round(h["env_steps"] / h["seconds"], 1)) for h in summary["history"]]
    print_table(f"waypoint_bert online → {summary['out']}", ("iteration", "loss", "p(teacher)", "success",
                                                             "env steps/s"), rows)
    if "table7" in summary:
        print((Path(summary["out"]) / "table7.md").read_text(encoding="utf-8"))
    return 0


def build_waypoint_config(args: argparse.Namespace):
    """The :class:`WaypointTrainConfig` of the command line (``--preset`` does not apply)."""
    from vlnverse.config import config_from_mapping
    from vlnverse.learning.waypoints.trainer import WaypointTrainConfig

    data = {"dataset": str(args.dataset), "out": str(args.out), "split": args.split, "seed": args.seed,
            "val_split": _val_split(args)}
    for name in ("epochs", "batch_size", "lr", "threads", "poses_per_scene"):
        value = getattr(args, name)
        if value is not None:
            data[name] = value
    return config_from_mapping(WaypointTrainConfig, data, where="train")


def _train_waypoints(args: argparse.Namespace) -> int:
    from vlnverse.learning.waypoints.trainer import best_epoch, train_waypoints

    config = build_waypoint_config(args)
    history = train_waypoints(config) if args.no_progress or args.json else _with_progress(config, train_waypoints, _waypoint_line)
    best = best_epoch(history)
    if args.json:
        print_json({"out": config.out, "agent_config": str(Path(config.out) / "agent.yaml"), "best_epoch": best.epoch,
                    "history": [e.__dict__ for e in history]})
        return 0
    rows = [(e.epoch, round(e.loss, 4), _pct(e.recall), _pct(e.precision), _pct(e.navigable),
             "-" if e.waypoints is None else round(e.waypoints, 2)) for e in history]
    print_table(f"waypoint predictor → {config.out}", ("epoch", "loss", "val recall %", "val precision %",
                                                       "on navigable %", "waypoints"), rows)
    print(f"best epoch {best.epoch}; use it with: vlnverse eval --agent text_history --agent-config "
          f"{Path(config.out) / 'agent.yaml'} ...")
    return 0


def build_pretrain_config(args: argparse.Namespace):
    """The :class:`EncoderPretrainConfig` of the command line (the ``cpu`` preset's channels)."""
    from vlnverse.config import config_from_mapping
    from vlnverse.errors import ConfigError
    from vlnverse.learning.presets import preset
    from vlnverse.learning.pretrain import EncoderPretrainConfig

    if args.frames is None:
        raise ConfigError("train encoders reads pre-rendered frames: give --frames (vlnverse dataset prerender)")
    data = {"frames": str(args.frames), "out": str(args.out), "augment": [str(a) for a in args.augment],
            "channels": preset("cpu")["model"]["channels"], "depth_trunk": args.depth_trunk, "seed": args.seed,
            "waypoint_checkpoint": str(args.waypoint_checkpoint) if args.waypoint_checkpoint else None}
    for name in ("epochs", "batch_size", "lr", "threads", "frame_stride"):
        value = getattr(args, name)
        if value is not None:
            data[name] = value
    if args.held_out_homes is not None:
        data["val_scenes"] = args.held_out_homes
    return config_from_mapping(EncoderPretrainConfig, data, where="train encoders")


def _train_encoders(args: argparse.Namespace) -> int:
    from vlnverse.learning.pretrain import ENCODERS, describe, pretrain_encoders

    config = build_pretrain_config(args)
    history = pretrain_encoders(config, on_epoch_end=None if args.json else lambda e: print(describe([e]), flush=True))
    encoders = Path(config.out) / ENCODERS
    if args.json:
        print_json({"out": config.out, "encoders": str(encoders), "history": [e.__dict__ for e in history]})
        return 0
    print(f"encoders written to {encoders}; train with them: vlnverse train cma ... --encoders {encoders}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from vlnverse.errors import ConfigError
    from vlnverse.learning.allocator import keep_freed_memory
    from vlnverse.learning.imitation import train_imitation

    if args.model == "encoders":
        return _train_encoders(args)
    if args.dataset is None:
        raise ConfigError(f"train {args.model} needs --dataset")
    if args.model == "waypoints":
        return _train_waypoints(args)
    if args.model == "waypoint_bert" or args.online:
        if not (args.model == "waypoint_bert" and args.online):
            raise ConfigError("online fine-tuning is for waypoint_bert: use `vlnverse train waypoint_bert --online`")
        return _train_online(args)
    config = build_config(args)
    keep_freed_memory()  # this process is ours: training steps reuse freed memory (see the module)
    if args.no_progress or args.json:
        result = train_imitation(config)
    else:
        result = _with_progress(config, train_imitation)
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
        return 0
    rows = [(e.epoch, e.loss, e.accuracy, _pct(e.val_sr), _pct(e.val_spl), round(e.samples / e.seconds, 1))
            for e in result.history]
    summary = {"out": str(result.out), "agent_config": str(result.agent_config),
               "best_epoch": result.best.epoch if result.best else None,
               "samples_per_second": round(result.samples_per_second, 2), "stopped_early": result.stopped_early,
               "processes": result.processes,
               "history": [e.__dict__ for e in result.history]}
    if args.json:
        print_json(summary)
        return 0
    print_table(f"{config.kind} imitation → {result.out}", ("epoch", "loss", "step acc", "val SR %", "val SPL %",
                                                            "samples/s"), rows)
    if result.stopped_early:
        print(f"stopped early after epoch {result.history[-1].epoch}: no better val SR in {config.patience} epochs")
    print(f"best epoch {summary['best_epoch']}; evaluate it with: "
          f"{eval_command(config.dataset, config.kind, result.agent_config)}")
    return 0


def eval_command(dataset: str | Path, kind: str, agent_config: str | Path) -> str:
    """The ``vlnverse eval`` command a finished training suggests: a track's own (its splits, tasks
    and step budget) when ``dataset`` is a track's, so the figures compare with its results."""
    from vlnverse.eval.tracks import track_of_dataset

    track = track_of_dataset(dataset)
    options = f" {track.eval_options()}" if track else ""
    command = f"vlnverse eval --dataset {dataset}{options} --agent {kind} --agent-config {agent_config} --out OUT"
    return f"{command}  (the {track.label} selection; tabulate with `vlnverse eval table --track {track.name}`)" \
        if track else command


def _val_split(args: argparse.Namespace, default: str = "val_unseen") -> str | None:
    """The validated split(s) of the command line (``default`` when not given; None for ``none``)."""
    split = args.val_split or default
    return None if split.lower() == "none" else split


def _count(option: str, text: str) -> int:
    from vlnverse.errors import ConfigError

    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{option} takes a number or 'auto', got {text!r}") from None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _imitation_line(stats) -> str:
    return (f"epoch {stats.epoch}: loss {stats.loss:.3f}, step acc {stats.accuracy:.3f}, "
            f"val SR {_pct(stats.val_sr)} SPL {_pct(stats.val_spl)}")


def _waypoint_line(row) -> str:
    return (f"epoch {row.epoch}: loss {row.loss:.4f}, val recall {_pct(row.recall)} precision {_pct(row.precision)} "
            f"on navigable {_pct(row.navigable)}")


def _with_progress(config, train, describe=_imitation_line):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn()) as bar:
        tasks: dict[str, int] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total or None)
            bar.update(tasks[phase], completed=done, total=total or None)

        def epoch_done(stats) -> None:
            bar.console.print(describe(stats))

        return train(config, progress=progress, on_epoch_end=epoch_done)
