"""Scene corpora: many houses on disk, resumable, parallel, with train/val/test splits.

Layout of a corpus folder::

    DIR/corpus.json              options the corpus was made with
    DIR/<scene_id>/scene.usdc    the stage (or scene.usda)
    DIR/<scene_id>/meta.json     seed, counts, navigable area (written last: marks completion)
    DIR/splits.json              train / val_seen / val_unseen / test scene ids

Scene ``k`` of a corpus with seed ``S`` has its own seed derived from ``(S, k)``, so a
scene never depends on which others were made before it, re-running skips finished
scenes, and the same command always yields the same bytes.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.fileio import write_json_atomic
from vlnverse.parallel import check_executor, run_units
from vlnverse.scene.procgen.house import GENERATOR_VERSION, HouseOptions, generate_house

#: The paper's split of its 263 scenes (train 177 : val-unseen 33 : test 53).
PAPER_SPLIT = {"train": 177, "val_unseen": 33, "test": 53}
SCENE_FILE = "scene"
SEED_SPACE_SIZE = 1 << 32
SEED_SPACES = {0: "scene", 1: "aug"}
"""Seed spaces and the scene-id prefix of their homes: ``0`` the benchmark's (every track's
homes), ``1`` augmentation homes (``vlnverse release augment``)."""
SEED_SPACE_BASES = {0: 0, 1: 1 << 48}
"""The first house seed of each space; a space holds :data:`SEED_SPACE_SIZE` seeds. A house draws
attempt ``k`` from ``default_rng([seed, k])``, whose ``SeedSequence`` reads the seed as 32-bit
words and ignores trailing zero words: seed ``2**32 * h + s`` at attempt 0 would draw what seed
``s`` draws at attempt ``h``. Augmentation seeds have the high words ``(2**16, 0)``, which no
attempt count reaches, so no augmentation house draws what a benchmark house draws."""
SPLIT_POLICIES = ("paper", "train")


@dataclass(frozen=True)
class CorpusOptions:
    """What a corpus is made of.

    Attributes:
        count: Number of scenes (>= 1).
        seed: Corpus seed (>= 0).
        house: House generator options.
        file_format: ``usdc`` (binary, default) or ``usda`` (text).
        validate: Also run :func:`~vlnverse.scene.procgen.validation.validate_scene` on
            each new scene and record the result in its meta.json.
        seed_space: Which range the house seeds come from (:data:`SEED_SPACES`): ``0`` for the
            benchmark's homes, ``1`` for augmentation homes, which can never be a benchmark home.
        splits: ``paper`` (the paper's train/val-unseen/test proportions) or ``train`` (every
            scene a training scene, as augmentation homes are).
    """

    count: int
    seed: int = 0
    house: HouseOptions = field(default_factory=HouseOptions)
    file_format: str = "usdc"
    validate: bool = False
    seed_space: int = 0
    splits: str = "paper"

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ConfigError(f"count must be a positive integer, got {self.count!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.file_format not in ("usdc", "usda"):
            raise ConfigError(f"format must be usdc or usda, got {self.file_format!r}")
        if self.seed_space not in SEED_SPACES:
            raise ConfigError(f"seed_space must be one of {sorted(SEED_SPACES)}, got {self.seed_space!r}")
        if self.splits not in SPLIT_POLICIES:
            raise ConfigError(f"splits must be one of {', '.join(SPLIT_POLICIES)}, got {self.splits!r}")

    def identity(self) -> dict:
        """The options that determine the scenes' bytes (validation does not); the seed space
        and split policy only when not the benchmark's, so its corpora keep their bytes."""
        identity = {"generator": GENERATOR_VERSION, "seed": self.seed, "format": self.file_format,
                    "house": asdict(self.house)}
        if self.seed_space:
            identity["seed_space"] = self.seed_space
        if self.splits != "paper":
            identity["splits"] = self.splits
        return identity

    def scene_id(self, index: int) -> str:
        """The id of scene ``index`` (``scene_0007``; augmentation homes ``aug_0007``)."""
        return scene_id(index, SEED_SPACES[self.seed_space])

    def scene_seed(self, index: int) -> int:
        """The house seed of scene ``index``."""
        return scene_seed(self.seed, index, self.seed_space)


def scene_id(index: int, prefix: str = "scene") -> str:
    return f"{prefix}_{index:04d}"


def scene_seed(corpus_seed: int, index: int, seed_space: int = 0) -> int:
    """The house seed of scene ``index`` (independent of the other scenes): a 32-bit draw of
    ``(corpus_seed, index)`` placed in seed space ``seed_space`` (:data:`SEED_SPACE_BASES`)."""
    return SEED_SPACE_BASES[seed_space] + int(np.random.SeedSequence([corpus_seed, index]).generate_state(1)[0])


def split_counts(count: int) -> dict[str, int]:
    """Paper proportions scaled to ``count`` (val-unseen and test rounded, train the rest)."""
    total = sum(PAPER_SPLIT.values())
    val = int(round(count * PAPER_SPLIT["val_unseen"] / total))
    test = int(round(count * PAPER_SPLIT["test"] / total))
    if count >= 3:
        val, test = max(val, 1), max(test, 1)
    else:
        val = test = 0
    return {"train": count - val - test, "val_unseen": val, "test": test}


def make_splits(ids: list[str], seed: int) -> dict[str, list[str]]:
    """Deterministic split of ``ids``; train scenes also serve as ``val_seen``."""
    counts = split_counts(len(ids))
    order = [ids[i] for i in np.random.default_rng([seed, 2**31 - 1]).permutation(len(ids))]
    train = sorted(order[:counts["train"]])
    val = sorted(order[counts["train"]:counts["train"] + counts["val_unseen"]])
    test = sorted(order[counts["train"] + counts["val_unseen"]:])
    return {"train": train, "val_seen": list(train), "val_unseen": val, "test": test}


def check_writable(out: Path) -> None:
    """Raise ConfigError unless ``out`` can be created and written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write_probe.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write to output folder {out}: {exc.strerror or exc}") from exc


def _meta_path(out: Path, index: int, options: CorpusOptions) -> Path:
    return out / options.scene_id(index) / "meta.json"


def is_done(out: Path, index: int, options: CorpusOptions) -> bool:
    """Whether scene ``index`` was completed with the same options."""
    meta = _meta_path(out, index, options)
    scene = out / options.scene_id(index) / f"{SCENE_FILE}.{options.file_format}"
    if not (meta.is_file() and scene.is_file()):
        return False
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return data.get("corpus") == options.identity() and data.get("index") == index


def build_scene(out: Path, index: int, options: CorpusOptions) -> dict:
    """Generate, write (and optionally validate) scene ``index``; returns its meta."""
    from vlnverse.scene.procgen.authoring import write_house

    house = generate_house(options.scene_seed(index), options.house)
    folder = out / options.scene_id(index)
    path = write_house(house, folder / f"{SCENE_FILE}.{options.file_format}", options.file_format)
    meta = {"scene_id": options.scene_id(index), "index": index, "file": path.name, "corpus": options.identity(),
            **house.summary()}
    if options.validate:
        from vlnverse.scene.procgen.validation import validate_scene

        report = validate_scene(path, agent_radius=options.house.agent_radius,
                                min_room_navigable=options.house.min_room_navigable)
        meta["validation"] = {"ok": report.ok, "errors": len(report.errors), "warnings": len(report.warnings),
                              "error_messages": [f"{f.rule}: {f.message}" for f in report.errors][:20]}
    write_json_atomic(folder / "meta.json", meta)
    return meta


def _build_unit(args: tuple[str, int, CorpusOptions]) -> dict:
    out, index, options = args
    return build_scene(Path(out), index, options)


def generate_corpus(out: str | Path, options: CorpusOptions, *, workers: int = 1,
                    on_scene: Callable[[dict, bool], None] | None = None, executor: str = "local",
                    ray_address: str | None = None, indices: Iterable[int] | None = None) -> dict:
    """Make (or finish) the corpus in ``out``.

    Args:
        out: Output folder.
        options: Corpus options.
        workers: Processes (local) or Ray tasks at once (1 local = in this process).
        on_scene: Called with (meta, skipped) after each scene as it finishes, for progress
            display; a new scene's meta also names its ``worker`` and that worker's
            ``peak_rss_mb``.
        executor: ``local`` or ``ray`` (the same bytes either way).
        ray_address: Ray cluster address (``None``: a local Ray instance).
        indices: The scenes to make (default: ``range(options.count)``); the splits list these.

    Returns:
        Summary: counts of generated/skipped scenes and the splits.
    """
    check_executor(executor, workers)
    out = Path(out)
    check_writable(out)
    corpus_file = out / "corpus.json"
    if corpus_file.is_file():
        try:
            previous = json.loads(corpus_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{corpus_file} is unreadable: {exc}") from exc
        if previous.get("identity") != options.identity():
            raise ConfigError(f"{out} holds a corpus made with other options "
                              f"({previous.get('identity')}); choose another --out")
    write_json_atomic(corpus_file, {"identity": options.identity()})
    indices = list(range(options.count) if indices is None else indices)
    todo, skipped = [], 0
    for index in indices:
        if is_done(out, index, options):
            skipped += 1
            if on_scene is not None:
                on_scene(json.loads(_meta_path(out, index, options).read_text(encoding="utf-8")), True)
        else:
            todo.append(index)
    units = run_units(_build_unit, [(str(out), i, options) for i in todo], workers=workers, executor=executor,
                      ray_address=ray_address, describe=lambda unit: options.scene_id(unit[1]))
    for unit in units:
        if on_scene is not None:
            on_scene({**unit.value, "worker": unit.worker, "peak_rss_mb": unit.peak_rss_mb}, False)
    ids = [options.scene_id(i) for i in indices]
    splits = make_splits(ids, options.seed) if options.splits == "paper" else \
        {"train": ids, "val_seen": [], "val_unseen": [], "test": []}
    write_json_atomic(out / "splits.json", splits)
    return {"out": str(out), "generated": len(todo), "skipped": skipped, "count": len(indices),
            "splits": {k: len(v) for k, v in splits.items()}}
