"""The checksums of what an evaluation read: its dataset, scene files and agent checkpoints.

``run.json`` records them when a run is made (:func:`vlnverse.eval.running.harness.evaluate`) and
``eval verify`` compares them with the verifier's own copies (:mod:`vlnverse.eval.verification.verify`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlnverse.tasks.storage import sha256_file


def input_checksums(dataset: Any, scene_files: Sequence[str]) -> dict[str, str]:
    """sha256 of a dataset's identity file (its manifest, which lists every shard's sha256, or
    the single episode file) and of each scene file, keyed by a stable name."""
    files = list(getattr(dataset, "files", ()))
    identity = Path(dataset.root) / "manifest.json" if dataset.manifest else (files[0] if len(files) == 1 else None)
    sums = {"dataset": sha256_file(identity)} if identity is not None else {
        f"dataset:{Path(f).name}": sha256_file(f) for f in files}
    for scene in sorted(set(scene_files)):  # bundled and release scenes are <scene_id>/scene.usdc
        sums[f"scene:{Path(scene).parent.name}/{Path(scene).name}"] = sha256_file(scene)
    return sums


def is_checkpoint_key(key: str) -> bool:
    """Whether an agent config key names a weights file (``checkpoint``, ``*_checkpoint``)."""
    return key == "checkpoint" or key.endswith("_checkpoint")


def checkpoint_checksums(agent_config: Mapping[str, Any]) -> dict[str, str]:
    """``{key: sha256}`` of every weights file an agent config names (see :func:`is_checkpoint_key`),
    so that ``eval verify --rerun`` can tell the verifier's copy is the one the run used."""
    return {key: sha256_file(value) for key, value in sorted(agent_config.items())
            if is_checkpoint_key(key) and isinstance(value, str) and Path(value).is_file()}


def release_digests(sums_file: str | Path) -> dict[str, str]:
    """The published digests of a release (its ``SHA256SUMS``: ``dataset/manifest.json`` and
    ``scenes/<scene_id>/<file>``), keyed as :func:`input_checksums` keys them.

    Raises:
        DatasetError: the file cannot be read or lists no dataset manifest.
    """
    from vlnverse.errors import DatasetError
    from vlnverse.eval.verification.untrusted import MalformedInput, read_text

    try:
        lines = read_text(sums_file).splitlines()
    except (MalformedInput, OSError) as exc:
        raise DatasetError(f"cannot read the release checksums {sums_file}: {exc}") from None
    out = {}
    for line in lines:
        digest, _, name = line.partition("  ")
        if name == "dataset/manifest.json":
            out["dataset"] = digest
        elif name.startswith("scenes/") and name.count("/") == 2:
            out[f"scene:{name.removeprefix('scenes/')}"] = digest
    if "dataset" not in out:
        raise DatasetError(f"{sums_file} lists no dataset/manifest.json: not a release's SHA256SUMS")
    return out
