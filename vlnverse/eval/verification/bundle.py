"""``vlnverse eval bundle``: an evaluation folder as one verifiable results archive.

The archive holds what a leaderboard (or a reviewer) needs to re-score the run with
``vlnverse eval verify``: ``run.json`` (settings, the dataset's and scenes' checksums),
``episodes.jsonl``, ``summary.json`` / ``summary.md``, the LLM transcript when the run
recorded one (``transcript.jsonl``), ``environment.json`` (the versions that produced it)
and ``SHA256SUMS`` over every other member.

Only regular files are packed (a symlink is refused, whatever it points to). The transcript
is packed when ``run.json``'s ``llm_record`` lies inside the folder, or when the caller names
it (``transcript=``): a path ``run.json`` gives outside the folder is refused, so a folder
cannot make the writer pack another file of the machine.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import sys
import tarfile
import time
from importlib import metadata
from pathlib import Path

from vlnverse import __version__
from vlnverse.errors import DatasetError
from vlnverse.eval.verification.untrusted import (
    DEFAULT_CAP,
    FILE_CAPS,
    MalformedInput,
    read_bytes,
    read_json,
)
from vlnverse.fileio import write_bytes_atomic

RUN_FILES = ("run.json", "episodes.jsonl", "summary.json", "summary.md")
LIBRARIES = ("numpy", "pybullet", "gymnasium", "usd-core", "torch", "transformers", "openai")


def environment() -> dict[str, object]:
    """The versions of what produced (and can re-score) a run."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"vlnverse": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "machine": platform.machine(), "libraries": versions}


def write_bundle(folder: str | Path, to: str | Path, *, transcript: str | Path | None = None) -> list[str]:
    """Write the archive of the evaluation folder ``folder`` to ``to``; returns its member names.

    Args:
        folder: The evaluation folder.
        to: The ``.tar.gz`` to write.
        transcript: The run's LLM transcript, when it was recorded outside the folder.

    Raises:
        DatasetError: ``folder`` is not a finished evaluation folder, a member is not a regular
            file, or ``run.json`` names a transcript outside the folder.
    """
    folder = Path(folder)
    missing = [name for name in RUN_FILES if not (folder / name).is_file() and not (folder / name).is_symlink()]
    if missing:
        raise DatasetError(f"{folder} is not a finished evaluation folder (missing {', '.join(missing)})")
    files = {name: folder / name for name in RUN_FILES}
    document = read_json(files["run.json"])
    run = document.get("run") if isinstance(document, dict) else None
    recorded = run.get("llm_record") if isinstance(run, dict) else None
    if transcript is not None:
        files["transcript.jsonl"] = Path(transcript)
    elif isinstance(recorded, str) and recorded:
        path = Path(recorded)  # as the run was given it (relative to where it ran)
        if not path.resolve().is_relative_to(folder.resolve()):
            raise DatasetError(f"run.json's llm_record {recorded} lies outside {folder}; pack it with "
                               "--transcript FILE if it is this run's transcript")
        if path.exists() or path.is_symlink():
            files["transcript.jsonl"] = path
    contents = {}
    for name, path in files.items():
        try:
            contents[name] = read_bytes(path, cap=FILE_CAPS.get(name, DEFAULT_CAP))
        except MalformedInput as exc:
            raise DatasetError(f"cannot pack {name}: {exc}") from None
    contents["environment.json"] = json.dumps(environment(), indent=2, sort_keys=True).encode("utf-8")
    sums = [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in contents.items()]
    contents["SHA256SUMS"] = ("\n".join(sums) + "\n").encode("utf-8")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in contents.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            archive.addfile(info, io.BytesIO(data))
    write_bytes_atomic(Path(to), buffer.getvalue())
    return list(contents)
