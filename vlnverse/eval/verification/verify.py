"""``vlnverse eval verify``: check an evaluation folder someone else made, against your own data.

The folder is data, never code: nothing it names is imported or run, and it is read only
through :mod:`vlnverse.eval.verification.untrusted` (regular files, size and depth caps, strict JSON).
The verifier supplies the trusted parts: the dataset (and its scenes), optionally its
published digest, the episode selection results are required for, and for ``--rerun`` the
agent's weights or transcript. The checks, in order:

1. **sha256sums** (a bundle's ``SHA256SUMS``, when present): every listed file has its digest,
   and the folder holds bundle members only;
   **scoring** (when the verifier states it): the run used the verifier's success radius, step
   budget and instruction view.
2. **inputs**: the verifier's dataset (its manifest and shards, and the scene files of the
   recorded episodes) has the checksums ``run.json`` recorded (and ``--expect-dataset``'s
   digest, or those of a release's ``SHA256SUMS``); a run that recorded none fails.
3. **records**: every record belongs to the required selection and agrees with its dataset
   episode, and every selected (episode, physics mode) has a record (``allow_partial``
   reports the missing ones without failing). With ``subset`` (a spot check of a stated part
   of the run), records outside the selection are counted, left unchecked, and named in the
   report (:attr:`VerifyReport.outside`) instead of failing.
4. **resimulation**: each record's actions are replayed through the harness with
   :class:`~vlnverse.eval.verification.records.RecordedActions` (same env, physics, seeds and
   scoring); trajectory, collisions, STOPs, goal distances, ending and every metric must equal
   the record's. The replay agent is built from the recorded action space alone, which must
   be one of the simulator's.
5. **summary**: ``summary.json`` (required) is recomputed from the records, its ``run``
   section must be ``run.json``'s, and ``summary.md`` must be its rendering.
6. **claims**: ``run.json``'s label is the agent's name and its privileged inputs those the
   agent reads with its recorded config (:mod:`vlnverse.eval.verification.claims`).
7. **rerun** (``rerun=True`` or a transcript): the agent is rebuilt from trusted parts and
   re-run, and must take every recorded action and give the same trace, usage and metrics
   (:mod:`vlnverse.eval.verification.rerun`).

Without the re-run, a verified folder is *consistent*: its results are what its actions give on
the verifier's data. Only the re-run shows that the named agent took those actions, and for an
LLM agent only that they follow from the transcript. The report lists what was proven and
what was only reported (:func:`vlnverse.eval.verification.claims.verdict`).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.eval.verification.claims import claim_problems, verdict
from vlnverse.eval.verification.records import (
    RecordedActions,
    check_against_dataset,
    compare_records,
    first_difference,
    record_label,
    replay_groups,
)
from vlnverse.eval.verification.submission import (
    EPISODES_FILE,
    RUN_FILE,
    SHA256,
    RecordedRun,
    read_submission,
)
from vlnverse.eval.verification.untrusted import MalformedInput, read_json, read_text, sha256_of

SUMMARY_FILE = "summary.json"
SUMMARY_MD = "summary.md"
SUMS_FILE = "SHA256SUMS"
BUNDLE_MEMBERS = (RUN_FILE, EPISODES_FILE, SUMMARY_FILE, SUMMARY_MD, "transcript.jsonl", "environment.json")
"""The files a bundle's ``SHA256SUMS`` may list (:mod:`vlnverse.eval.verification.bundle`)."""
UNCHECKED_SUMMARY = ("run", "timing", "budget")
"""Parts of ``summary.json`` not recomputed from the records (``run`` is compared with ``run.json``;
the LLM budget is the folder's spend, which no record holds)."""


@dataclass(frozen=True)
class Selection:
    """The episodes a verifier requires results for; a field left ``None`` is the run's own.

    Attributes:
        split: Split names, comma-separated, or ``all``.
        task: Task names, comma-separated, or ``all``.
        physics: Physics modes.
        episodes: ``"all"`` or the size of a seeded sample.
        seed: The seed the run must have used (it also draws the sample).
    """

    split: str | None = None
    task: str | None = None
    physics: tuple[str, ...] | None = None
    episodes: int | str | None = None
    seed: int | None = None

    def resolve(self, run: RecordedRun) -> tuple[str, str, tuple[str, ...], int | None, int, str]:
        """``(split, task, physics, sample size or None, seed, description)`` for ``run``."""
        from vlnverse.sim.physics import physics_mode

        physics = run.physics if self.physics is None else tuple(physics_mode(p) for p in self.physics)
        limit = run.episodes if self.episodes is None else None if self.episodes == "all" else int(self.episodes)
        split = run.split if self.split is None else self.split
        task = run.task if self.task is None else self.task
        seed = run.seed if self.seed is None else self.seed
        stated = [name for name in ("split", "task", "physics", "episodes", "seed") if getattr(self, name) is not None]
        source = f"{', '.join(stated)} stated by the verifier, the rest " if stated else ""
        text = (f"split {split} · task {task} · physics {', '.join(physics)} · episodes "
                f"{'all' if limit is None else limit} · seed {seed} ({source or 'all '}from run.json)")
        return split, task, physics, limit, seed, text


@dataclass
class VerifyReport:
    """What :func:`verify_run` checked and read.

    Attributes:
        records: Records in the folder.
        selection: The episode selection results were required for, and who stated it.
        settings: The run's scoring settings (which a leaderboard compares with its own).
        checksums: ``{name: sha256}`` of every file read (dataset, scenes, run files).
        checks: ``{check name: outcome}``, in the order run.
        mismatches: Every mismatch found.
        proven: What the checks proved (when they passed).
        reported: What the folder says that no check proved.
        outside: Records outside the selection, left unchecked (``subset`` only).
    """

    records: int = 0
    selection: str = ""
    settings: str = ""
    checksums: dict[str, str] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    proven: list[str] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)
    outside: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def checked(self) -> int:
        """Records the checks covered (every record unless ``outside`` ones were left)."""
        return self.records - self.outside


def verify_run(out: str | Path, *, dataset: str | Path, scenes_dir: str | Path | None = None,
               expect_dataset: str | None = None, release_sums: str | Path | None = None,
               selection: Selection = Selection(), scoring: Mapping[str, Any] | None = None,
               allow_partial: bool = False, subset: bool = False,
               rerun: bool = False, transcript: str | Path | None = None,
               checkpoints: Mapping[str, str | Path] | None = None, workers: int = 1,
               on_check: Callable[[str, str], None] | None = None) -> VerifyReport:
    """Check the evaluation folder ``out`` (see the module docs): each of :data:`CHECKS` in turn.

    Args:
        out: The evaluation folder (or an unpacked bundle).
        dataset: The verifier's copy of the dataset (never the path ``run.json`` names).
        scenes_dir: Where its scene paths are relative to (default: its manifest's; never
            ``run.json``'s).
        expect_dataset: The published sha256 of the dataset's manifest, checked too.
        release_sums: A release's published ``SHA256SUMS``: the manifest and every scene read
            must have the digests it lists.
        selection: The episodes results are required for (unstated parts: the run's own).
        scoring: Scoring settings the run must have used (``success_distance``, ``max_steps``,
            ``instruction_view``, ``trace_metrics``; unstated ones are the run's own, printed in
            the report).
        allow_partial: Report selected episodes without a record instead of failing.
        subset: Check only the records of ``selection``; the others are counted in
            :attr:`VerifyReport.outside`, not checked (a spot check of a part of the run).
        rerun: Re-run the agent from trusted parts and compare every action.
        transcript: An LLM agent's transcript (``--llm-record`` file) to re-run it from.
        checkpoints: ``{agent config key: the verifier's copy}`` of the agent's weights files.
        workers: Processes for the re-simulation.
        on_check: Called with ``(check, outcome)`` as each check ends.

    Raises:
        MalformedInput: a submitted file cannot be read as what it should be.
        DatasetError: no evaluation folder, or the dataset or a scene cannot be read.
        ConfigError: invalid verifier settings, or a file ``rerun`` needs was not given.
    """
    from vlnverse.eval.running.harness import select_episodes
    from vlnverse.tasks.dataset import EpisodeDataset

    if selection.seed is not None and selection.seed < 0:
        raise ConfigError(f"--seed {selection.seed}: a seed is a non-negative integer")
    if expect_dataset is not None and not SHA256.fullmatch(expect_dataset.lower()):
        raise ConfigError(f"--expect-dataset {expect_dataset!r} is not a sha256 (64 hex digits)")
    out = Path(out)
    report = VerifyReport()
    run, records = read_submission(out)
    report.records = len(records)
    for name in (RUN_FILE, EPISODES_FILE):
        report.checksums[name] = sha256_of(out / name)
    data = EpisodeDataset.open(dataset, scenes_dir=scenes_dir)
    split, task, physics, limit, seed, report.selection = selection.resolve(run)
    report.settings = (f"agent {run.agent} · action space {json.dumps(run.action_space)} · success distance "
                       f"{run.success_distance} m · max steps {run.max_steps or 'default'} · instruction view "
                       f"{run.instruction_view} · backend {run.backend}")
    episodes = select_episodes(data, split, task, limit, seed)
    state = Verification(
        out=out, run=run, records=records, data=data, by_id={e.episode_id: e for e in episodes},
        wanted={(e.episode_id, p) for e in episodes for p in physics}, seed=seed, report=report,
        make_config=_config_maker(run, str(dataset), str(data.scenes_dir), workers),
        options=VerifyOptions(expect_dataset=expect_dataset, release_sums=release_sums, scoring=scoring or {},
                              allow_partial=allow_partial, subset=subset, rerun=rerun,
                              transcript=None if transcript is None else Path(transcript),
                              checkpoints={k: Path(v) for k, v in (checkpoints or {}).items()}))
    for check in CHECKS:
        result = check.run(state)
        if result is None:  # the check does not apply to this folder or request
            continue
        problems, detail = result
        report.mismatches.extend(problems)
        report.checks[check.name] = f"FAIL: {problems[0]}" if problems else f"ok{detail}"
        if on_check:
            on_check(check.name, report.checks[check.name])
        if check.gate and report.mismatches:
            return report
    report.proven, report.reported = verdict(run, report.checks, seed_stated=selection.seed is not None,
                                             trace_pinned="trace_metrics" in (scoring or {}),
                                             transcript=transcript is not None)
    if report.outside:
        report.reported.insert(0, f"the {report.outside} record(s) outside the selection: not re-simulated"
                                  f"{' nor re-run' if 'rerun' in report.checks else ''}, yet counted in the "
                                  "summaries")
    return report


@dataclass(frozen=True)
class VerifyOptions:
    """What the verifier asked for beyond the selection (see :func:`verify_run`)."""

    expect_dataset: str | None
    release_sums: str | Path | None
    scoring: Mapping[str, Any]
    allow_partial: bool
    subset: bool
    rerun: bool
    transcript: Path | None
    checkpoints: Mapping[str, Path]


@dataclass
class Verification:
    """What the checks share: the folder and what it holds, the verifier's dataset and the
    selected episodes (``by_id``; ``wanted``: each with each physics mode), the report they
    fill, and ``keyed``, the records of the selection (set by the records check)."""

    out: Path
    run: RecordedRun
    records: list[dict[str, Any]]
    data: Any
    by_id: dict[str, Any]
    wanted: set[tuple[str, str]]
    seed: int
    report: VerifyReport
    make_config: Callable[..., Any]
    options: VerifyOptions
    keyed: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


CheckResult = tuple[list[str], str] | None
"""A check's problems and the detail its passing line shows; None: it does not apply."""


@dataclass(frozen=True)
class Check:
    """One check of :func:`verify_run`: its name in the report, the function that runs it and
    whether a failure so far stops the verification after it (``gate``)."""

    name: str
    run: Callable[[Verification], CheckResult]
    gate: bool = False


def _sums_check(v: Verification) -> CheckResult:
    return (_check_sums(v.out), "") if _present(v.out / SUMS_FILE) else None


def _scoring_check(v: Verification) -> CheckResult:
    if not v.options.scoring:
        return None
    return [f"{name}: run.json {getattr(v.run, name)!r}, the verifier requires {value!r}"
            for name, value in v.options.scoring.items() if getattr(v.run, name) != value], ""


def _inputs_check(v: Verification) -> CheckResult:
    """The dataset and the scenes the records replay in have the run's (and the published) digests."""
    from vlnverse.eval.running.inputs import input_checksums, release_digests
    from vlnverse.tasks.storage import verify_dataset

    options, run = v.options, v.run
    recorded_ids = {r["episode_id"] for r in v.records} & set(v.by_id)  # the scenes they replay in must be the run's
    read = input_checksums(v.data, sorted({str(v.data.scene_file(v.by_id[i])) for i in recorded_ids}))
    v.report.checksums.update(read)
    problems = verify_dataset(v.data.root) if v.data.manifest else []
    if options.expect_dataset is not None and read.get("dataset") != options.expect_dataset.lower():
        problems.append(f"dataset: sha256 {read.get('dataset', 'none')[:12]} of your copy, "
                        f"{options.expect_dataset[:12]} expected")
    if options.release_sums is not None:
        published = release_digests(options.release_sums)
        problems += [f"{name}: sha256 {digest[:12]} of your copy, {published.get(name, 'none')[:12]} in "
                     f"{Path(options.release_sums).name}" for name, digest in sorted(read.items())
                     if published.get(name) != digest]
    if run.inputs is None:
        problems.append("run.json records no input checksums: what the run read cannot be compared with your copy")
    else:
        problems += [f"{name}: sha256 {digest[:12]} of your copy, {str(run.inputs.get(name, 'none'))[:12]} "
                     "when the run was made" for name, digest in sorted(read.items()) if run.inputs.get(name) != digest]
    return problems, ""


def _records_check(v: Verification) -> CheckResult:
    """Every record is of the selection and agrees with its episode; every selected pair has one."""
    problems = [] if v.seed == v.run.seed else [f"run.json seed {v.run.seed}, the verifier requires seed {v.seed}"]
    seen: set[tuple[str, str]] = set()
    for record in v.records:
        key = (record["episode_id"], record["physics"])
        if key in seen:
            problems.append(f"{record_label(record)}: recorded twice")
        elif key in v.wanted:
            found = check_against_dataset(record, v.by_id[key[0]])
            problems += [found] if found else []
            v.keyed[key] = record
        elif v.options.subset:
            v.report.outside += 1
        else:
            problems.append(f"{record_label(record)}: not in the required selection")
        seen.add(key)
    wanted, missing = v.wanted, sorted(v.wanted - seen)
    outside = f"; {v.report.outside} outside the selection not checked" if v.report.outside else ""
    detail = f" ({len(wanted) - len(missing)} of {len(wanted)} selected have a record{outside})"
    if missing:
        gap = f"{len(missing)} of {len(wanted)} selected episode(s) have no record (first: {missing[0][0]} " \
              f"({missing[0][1]}))"
        if v.options.allow_partial:
            detail = f" (partial: {gap}; --allow-partial{outside})"
        else:
            problems.append(gap)
    return problems, detail


def _resimulation_check(v: Verification) -> CheckResult:
    """Each record's actions, replayed, give the record."""
    replayed = _replay(v.run, v.keyed, v.make_config)
    problems = []
    for key, record in v.keyed.items():
        found = compare_records(record, replayed[key]) if key in replayed else \
            f"{record_label(record)}: not re-simulated"
        problems += [found] if found else []
    return problems, f" ({sum(k in replayed for k in v.keyed)} episodes re-simulated)"


def _rerun_check(v: Verification) -> CheckResult:
    """The agent, rebuilt from trusted parts (or its transcript), takes every recorded action."""
    from vlnverse.eval.verification.rerun import CannotRerun, rerun_actions

    options = v.options
    if not (options.rerun or options.transcript is not None):
        return None
    try:
        problems, count, sums = rerun_actions(v.run, v.keyed, v.make_config, transcript=options.transcript,
                                              checkpoints=options.checkpoints)
    except CannotRerun as exc:
        return [str(exc)], ""
    v.report.checksums.update(sums)
    what = "replayed: the actions follow from this transcript" if options.transcript is not None else \
        f"re-run by {v.run.agent}: every action the same"
    return problems, f" ({count} episodes {what})"


CHECKS: tuple[Check, ...] = (
    Check("sha256sums", _sums_check),
    Check("scoring", _scoring_check),
    Check("inputs", _inputs_check, gate=True),  # the harness refuses a dataset that does not match its manifest
    Check("records", _records_check),
    Check("resimulation", _resimulation_check),
    Check("summary", lambda v: (_check_summary(v.out, v.run, v.records, v.report), "")),
    Check("claims", lambda v: (claim_problems(v.run), "")),
    Check("rerun", _rerun_check),
)
"""The checks of :func:`verify_run`, in the order they run (the module docs say what each proves)."""


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _check_sums(out: Path) -> list[str]:
    """Where the files differ from the bundle's ``SHA256SUMS`` (which must list the run files)."""
    listed: dict[str, str] = {}
    for number, line in enumerate(read_text(out / SUMS_FILE).splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or not SHA256.fullmatch(digest) or name not in BUNDLE_MEMBERS or name in listed:
            raise MalformedInput(f"{out / SUMS_FILE}:{number}: expected '<sha256>  <bundle member>' once per member")
        listed[name] = digest
    problems = [f"{SUMS_FILE} does not list {name}" for name in (RUN_FILE, EPISODES_FILE, SUMMARY_FILE, SUMMARY_MD)
                if name not in listed]
    problems += [f"{path.name[:80]}: not a bundle member (a bundle holds {', '.join(BUNDLE_MEMBERS)} and {SUMS_FILE})"
                 for path in sorted(out.iterdir()) if path.name not in (*BUNDLE_MEMBERS, SUMS_FILE)]
    for name, digest in listed.items():
        if not _present(out / name):
            problems.append(f"{name}: listed in {SUMS_FILE} but missing")
        elif sha256_of(out / name) != digest:
            problems.append(f"{name}: sha256 differs from {SUMS_FILE}'s")
    return problems


def _check_summary(out: Path, run: RecordedRun, records: list[dict[str, Any]], report: VerifyReport) -> list[str]:
    """Where ``summary.json`` / ``summary.md`` differ from what the records and ``run.json`` give."""
    from vlnverse.eval.reporting.report import summarize, summary_markdown

    missing = [name for name in (SUMMARY_FILE, SUMMARY_MD) if not _present(out / name)]
    if missing:
        return [f"no {name}: the summary cannot be checked" for name in missing]
    stored = read_json(out / SUMMARY_FILE)
    if not isinstance(stored, dict):
        raise MalformedInput(f"{out / SUMMARY_FILE}: not a JSON object")
    report.checksums[SUMMARY_FILE] = sha256_of(out / SUMMARY_FILE)
    found = first_difference(run.raw, stored.get("run"), "summary.json run", 0.0)
    if found:
        return [f"{found} (run.json's run section)"]
    try:
        again = json.loads(json.dumps(summarize(records, run.raw, seed=run.seed), default=str))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError) as exc:
        raise MalformedInput(f"{out / EPISODES_FILE}: its records do not make a summary "
                             f"({type(exc).__name__}: {str(exc)[:120]})") from None
    found = first_difference(_comparable(stored), _comparable(again), "summary", 1e-9)
    if found:
        return [found]
    text = read_text(out / SUMMARY_MD)
    report.checksums[SUMMARY_MD] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    expected = summary_markdown(stored)
    if text != expected:
        lines = list(zip(text.splitlines(), expected.splitlines(), strict=False))
        number = next((i for i, (a, b) in enumerate(lines, start=1) if a != b), len(lines) + 1)
        return [f"{SUMMARY_MD}: line {number} is not what summary.json renders to"]
    return []


def _comparable(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary without the parts not recomputed from the records (:data:`UNCHECKED_SUMMARY`)."""
    return {k: v for k, v in summary.items() if k not in UNCHECKED_SUMMARY}


def _config_maker(run: RecordedRun, dataset: str, scenes_dir: str, workers: int) -> Callable[..., Any]:
    """``make(out, physics, episode_ids)``: the :class:`EvalConfig` that re-runs those episodes of
    ``run`` (its seeds and scoring) on the verifier's dataset."""
    from vlnverse.eval.running.harness import EvalConfig

    def make(out: Path, physics: tuple[str, ...], episode_ids: tuple[str, ...]) -> Any:
        return EvalConfig(dataset=dataset, out=str(out), agent="recorded_actions", split="all", task="all",
                          physics=physics, episode_ids=episode_ids, seed=run.seed, max_steps=run.max_steps,
                          success_distance=run.success_distance, instruction_view=run.instruction_view, plots=0,
                          workers=workers, backend=run.backend, episode_timeout=None, scenes_dir=scenes_dir,
                          metrics=run.metrics_config())

    return make


def _replay(run: RecordedRun, records: Mapping[tuple[str, str], Mapping[str, Any]],
            make_config: Callable[..., Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Re-simulate exactly ``records`` through the harness with :class:`RecordedActions`."""
    from vlnverse.eval.running.harness import evaluate

    agent = RecordedActions(records, run.action_space)
    replayed: dict[tuple[str, str], dict[str, Any]] = {}
    for physics, ids in replay_groups(records):
        with tempfile.TemporaryDirectory(prefix="vlnverse-verify-") as tmp:
            result = evaluate(make_config(Path(tmp), physics, ids), agent=agent)
        replayed.update({(str(r["episode_id"]), str(r["physics"])): r for r in result.records
                         if (str(r["episode_id"]), str(r["physics"])) in records})
    return replayed
