"""Named benchmark tracks: a fixed release build and the episodes its results are reported on.

A track pins what ``vlnverse release build`` makes (scale and seed) and publishes the
checksums of the build's content: the ``SHA256SUMS`` lines of the scenes and of the dataset
(manifest, shards, reference images), not of the statistics, plots and card, which describe
the data and may be redrawn by a later version without changing an episode. Anyone can check
that their copy is the track's: ``vlnverse release build --track mini --out DIR`` builds it and
compares the digest of those lines. Results on a track are labelled with :attr:`Track.label`.

- ``mini`` (**VLNVerse-mini**, the CPU track): 13 homes (8 train / 2 val-unseen / 3 test),
  fine + coarse instructions; its learned baselines train and evaluate on two CPU cores in an
  afternoon (``docs/results-mini.md``).
- ``full``: the paper's 263 homes, for machines with GPUs; its digest is not published yet.

Tracks are a registry: a third party adds its own with :func:`register_track` (its
``sums`` naming its own published checksums), and ``evaluate(config, track=NAME)`` and the
commands' ``--track NAME`` then accept it. The built-in tracks' checksums are package data
(:mod:`vlnverse.data`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from vlnverse.data import data_path
from vlnverse.errors import ConfigError
from vlnverse.registry import Registry

CHECKSUMS_DIR = data_path("tracks")
"""Where the built-in tracks' published content checksums are kept (``<track>/SHA256SUMS``)."""

CONTENT = ("scenes/", "dataset/")
"""The release paths that decide results (under these, :data:`DESCRIPTIONS` excepted)."""
DESCRIPTIONS = ("dataset/report/",)
"""Statistics and plots of the dataset: outside a track's content."""


@dataclass(frozen=True)
class Track:
    """A fixed release and the selection its results are reported on.

    Attributes:
        name: The name commands accept (``--track NAME``).
        label: How tables and pages name results on this track.
        scale: ``release build --scale``.
        seed: ``release build --seed``.
        splits: Evaluation splits of its result tables.
        tasks: Tasks trained on and reported.
        physics: Physics modes every result reports.
        max_steps: Step budget per episode (the learned baselines' 200-step cap, §5.2).
        success_distance: Success radius (m).
        config_hash: The dataset's ``manifest.json`` ``config_hash`` (None: not published).
        eval_seed: ``vlnverse eval --seed`` of every result (``eval verify --track`` requires it,
            so a best run of several seeds is not a result). Trace metrics use the default
            parameters.
        sums: The published ``SHA256SUMS`` file (None: the package's
            ``tracks/<name>/SHA256SUMS``, where the built-in tracks keep theirs).
    """

    name: str
    label: str
    scale: float
    seed: int
    splits: tuple[str, ...] = ("val_seen", "val_unseen", "test")
    tasks: tuple[str, ...] = ("fine", "coarse")
    physics: tuple[str, ...] = ("strict", "tel_hop")
    max_steps: int = 200
    success_distance: float = 3.0
    config_hash: str | None = None
    eval_seed: int = 0
    sums: str | None = None

    def eval_options(self) -> str:
        """The ``vlnverse eval`` options of the track's results (its splits, tasks and step budget;
        its physics modes, success radius and seed are the command's defaults)."""
        return f"--split {','.join(self.splits)} --task {','.join(self.tasks)} --max-steps {self.max_steps}"

    @property
    def checksums(self) -> Path:
        """The published content checksums of the track's build (``sha256sum`` format)."""
        return Path(self.sums) if self.sums else CHECKSUMS_DIR / self.name / "SHA256SUMS"

    def published_digest(self) -> str | None:
        """SHA-256 of the published content checksums (None when the track publishes none)."""
        return sha256_of(self.checksums) if self.checksums.is_file() else None


TRACKS: Registry[Track] = Registry("track")
TRACKS.register("mini", Track("mini", "VLNVerse-mini (CPU track)", scale=0.05, seed=0, config_hash="7c42d9a0a8b1c923"))
TRACKS.register("full", Track("full", "VLNVerse (full scale)", scale=1.0, seed=0))


def register_track(track: Track, *, overwrite: bool = False) -> None:
    """Add ``track`` under ``track.name`` (a :class:`~vlnverse.errors.RegistryError` if the
    name is taken, unless ``overwrite``)."""
    TRACKS.register(track.name, track, overwrite=overwrite)


def track_of_dataset(dataset: str | Path) -> Track | None:
    """The track whose dataset ``dataset`` is (by its manifest's ``config_hash``), or None."""
    import json

    try:
        manifest = json.loads((Path(dataset) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = manifest.get("config_hash") if isinstance(manifest, dict) else None
    tracks = (TRACKS.get(name) for name in TRACKS)
    return next((track for track in tracks if found is not None and track.config_hash == found), None)


def get_track(name: str | Track) -> Track:
    """The track called ``name`` (a :class:`Track` is returned as it is).

    Raises:
        ConfigError: no such track (the message lists the valid names).
    """
    if isinstance(name, Track):
        return name
    if name not in TRACKS:
        raise ConfigError(f"unknown track {name!r}; valid: {', '.join(TRACKS)}")
    return TRACKS.get(name)


def sha256_of(path: Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def content_checksums(checksums: str) -> str:
    """The lines of a release's ``SHA256SUMS`` text that cover its content, in its order."""
    lines = [line for line in checksums.splitlines() if line]
    kept = [line for line in lines if line[66:].startswith(CONTENT) and not line[66:].startswith(DESCRIPTIONS)]
    return "\n".join(kept) + "\n"


def check_release(track: Track, release: Path) -> tuple[bool, str]:
    """Compare a built release's content checksums with the track's published ones.

    Returns:
        ``(matches, message)``; ``matches`` is False when the digests differ or the track
        publishes no digest, and the message then names the first differing files.
    """
    built = content_checksums((Path(release) / "SHA256SUMS").read_text(encoding="utf-8"))
    digest = hashlib.sha256(built.encode("utf-8")).hexdigest()
    published = track.published_digest()
    if published is None:
        return False, f"track {track.name} publishes no digest; this build's content digest is {digest}"
    if digest == published:
        return True, f"reproduces {track.label}: content digest {digest}"
    ours = _pairs(built)
    theirs = _pairs(track.checksums.read_text(encoding="utf-8"))
    differing = sorted(path for path in ours.keys() | theirs.keys() if ours.get(path) != theirs.get(path))
    shown = ", ".join(differing[:5]) + (f" and {len(differing) - 5} more" if len(differing) > 5 else "")
    return False, (f"does NOT reproduce {track.label}: content digest {digest}, published {published}; "
                   f"{len(differing)} files differ: {shown}")


def _pairs(checksums: str) -> dict[str, str]:
    """``path -> digest`` of ``sha256sum``-format text."""
    pairs = (line.split("  ", 1) for line in checksums.splitlines() if line)
    return {path: digest for digest, path in pairs}


def require_track_dataset(track: Track, folder: Path) -> None:
    """Refuse an evaluation folder whose ``run.json`` does not record the track's dataset.

    The check reads the dataset digest the run recorded (``run.inputs.dataset``, the SHA-256 of
    the dataset's ``manifest.json``) and compares it with the track's published one; whether
    the records themselves hold up is ``vlnverse eval verify``'s job.

    Raises:
        ConfigError: no published digest, no ``run.json``, or another dataset.
    """
    import json

    published = (_pairs(track.checksums.read_text(encoding="utf-8")).get("dataset/manifest.json")
                 if track.checksums.is_file() else None)
    if published is None:
        raise ConfigError(f"track {track.name} publishes no dataset digest")
    run_file = Path(folder) / "run.json"
    try:
        recorded = json.loads(run_file.read_text(encoding="utf-8"))["run"].get("inputs", {}).get("dataset")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{folder}: cannot read the dataset its run used ({run_file}: {exc})") from exc
    if recorded != published:
        raise ConfigError(f"{folder} was not evaluated on {track.label}'s dataset (its manifest sha256 is "
                          f"{recorded or 'not recorded'}; the track's is {published})")
