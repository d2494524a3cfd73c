"""``vlnverse eval bundle``: an evaluation folder as one verifiable results archive.

The archive holds what a leaderboard (or a reviewer) needs to re-score the run with
``vlnverse eval verify``: ``run.json`` (settings, the dataset's and scenes' checksums),
``episodes.jsonl``, ``summary.json`` / ``summary.md``, the LLM transcript when the run
recorded one (``transcript.jsonl``), ``environment.json`` (the versions that produced it)
and ``SHA256SUMS`` over every other member.
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
from vlnverse.fileio import write_bytes_atomic
from vlnverse.tasks.storage import sha256_file

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


def write_bundle(folder: str | Path, to: str | Path) -> list[str]:
    """Write the archive of the evaluation folder ``folder`` to ``to``; returns its member names.

    Raises:
        DatasetError: ``folder`` is not a finished evaluation folder.
    """
    folder = Path(folder)
    missing = [name for name in RUN_FILES if not (folder / name).is_file()]
    if missing:
        raise DatasetError(f"{folder} is not a finished evaluation folder (missing {', '.join(missing)})")
    files = {name: folder / name for name in RUN_FILES}
    run = json.loads(files["run.json"].read_text(encoding="utf-8")).get("run", {})
    transcript = run.get("llm_record")
    if transcript and Path(transcript).is_file():
        files["transcript.jsonl"] = Path(transcript)
    extra = {"environment.json": json.dumps(environment(), indent=2, sort_keys=True).encode("utf-8")}
    sums = [f"{sha256_file(path)}  {name}" for name, path in files.items()]
    sums += [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in extra.items()]
    extra["SHA256SUMS"] = ("\n".join(sums) + "\n").encode("utf-8")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, path in files.items():
            archive.add(path, arcname=name)
        for name, data in extra.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), int(time.time())
            archive.addfile(info, io.BytesIO(data))
    write_bytes_atomic(Path(to), buffer.getvalue())
    return [*files, *extra]

