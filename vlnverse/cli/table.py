"""``vlnverse eval table``: evaluation folders or published bundles side by side (Table 3, the
tasks pooled, a track's leaderboard file and its SR picture)."""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path

from vlnverse.cli.output import print_json

BUNDLE_SUFFIX = ".tar.gz"


def register(tools) -> None:
    """Add ``table`` to ``vlnverse eval``'s tools."""
    table = tools.add_parser("table", help="Table 3: evaluation folders side by side with 95 %% CIs",
                             description="One table per task (fine, coarse) and split (val_seen, val_unseen, "
                                         "test): a row per folder and physics mode (Strict, Tel-Hop), columns "
                                         "TL NE SR OSR SPL nDTW CR as mean [95 % bootstrap CI], and the "
                                         "paper's Table 3 SR / SPL in a separate column for the agents it lists. "
                                         "A results bundle (.tar.gz of 'eval bundle') stands for its folder.")
    table.add_argument("folders", nargs="+", metavar="[LABEL=]FOLDER|BUNDLE.tar.gz",
                       help="evaluation folders or results bundles (labelled by run.json's agent unless LABEL= is "
                            "given)")
    table.add_argument("--to", type=Path, default=None, metavar="FILE.md", help="also write the tables here")
    table.add_argument("--track", default=None,
                       help="label the tables with this track (e.g. mini: VLNVerse-mini) after checking that "
                            "every folder was evaluated on its dataset; folders covering part of it are labelled "
                            "'partial'")
    table.add_argument("--page", action="store_true",
                       help="cells for a web page: each 95 %% interval on a second line in small type")
    table.add_argument("--json", action="store_true", help="print the rows as one JSON object")
    table.add_argument("--pooled", action="store_true",
                       help="one table per split with every task pooled (fine + coarse on a track): SR, SPL, OSR and "
                            "NE with the pooled episodes' 95 %% CIs, and the share of each ending")
    table.add_argument("--leaderboard", type=Path, default=None, metavar="FILE.json",
                       help="write the leaderboard: a row per agent, split, task (and the tasks pooled) and physics "
                            "mode with every metric's 95 %% CI, the endings, n, the bundle's sha256 and the command "
                            "that verifies it")
    table.add_argument("--figure", type=Path, default=None, metavar="FILE.png",
                       help="draw each agent's pooled SR with its 95 %% CI beside random's, one panel per split")
    table.set_defaults(handler=_table)


def _table(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="vlnverse-table-") as tmp:
        specs, digests = _unpacked(args.folders, Path(tmp))
        return _tabulate(args, specs, digests)


def _unpacked(folders: list[str], tmp: Path) -> tuple[list[str], list[str | None]]:
    """``[LABEL=]FOLDER`` specs with each bundle unpacked under ``tmp``, and each bundle's sha256."""
    from vlnverse.eval.tracks import sha256_of
    from vlnverse.eval.verification.unpack import unpack_bundle

    specs, digests = [], []
    for index, spec in enumerate(folders):
        label, sep, path = spec.rpartition("=")
        if not path.endswith(BUNDLE_SUFFIX):
            specs.append(spec)
            digests.append(None)
            continue
        folder = tmp / str(index)
        unpack_bundle(path, folder)
        specs.append(f"{label}{sep}{folder}")
        digests.append(sha256_of(Path(path)))
    return specs, digests


def _tabulate(args: argparse.Namespace, specs: list[str], digests: list[str | None]) -> int:
    from vlnverse.fileio import write_text_atomic
    from vlnverse.release.table3 import (
        SPLITS,
        TASKS,
        load_runs,
        partial_label,
        rows,
        table3_markdown,
    )

    runs = load_runs(specs)
    track = partial = None
    if args.track:
        from vlnverse.eval.tracks import get_track, require_track_dataset

        track = get_track(args.track)
        for spec in specs:
            require_track_dataset(track, Path(spec.rpartition("=")[2]))
        partial = partial_label(runs, track)
    pooled = _pooled_runs(runs, specs) if args.pooled or args.leaderboard or args.figure else []
    if args.pooled:
        from vlnverse.eval.scoring.pooled import pooled_markdown

        heading = f"{track.label}, {partial or 'tasks pooled'}" if track else ""
        text = (f"### {heading}\n\n" if heading else "") + pooled_markdown(pooled)
    else:
        text = table3_markdown(runs, track=track.label if track else None, partial=partial, page=args.page)
    if args.to:
        write_text_atomic(args.to, text + "\n")
    if args.leaderboard or args.figure:
        _write_leaderboard(args, track, runs, pooled, digests)
    if args.json and args.pooled:
        print_json({"track": track.label if track else None, "partial": partial,
                    "pooled": {label: [group.to_dict() for group in groups] for label, groups in pooled}})
    elif args.json:
        print_json({"track": track.label if track else None, "partial": partial,
                    **{f"{task}/{split}": rows(runs, task, split) for task in TASKS for split in SPLITS}})
    else:
        print(text)
    return 0


def _pooled_runs(runs: list, specs: list[str]) -> list:
    """``(label, pooled groups)`` of each ``[LABEL=]FOLDER``, from its records."""
    from vlnverse.eval.scoring.pooled import pooled_groups
    from vlnverse.eval.verification.untrusted import read_json_lines

    out = []
    for (label, _, _), spec in zip(runs, specs, strict=True):
        records = (record for _, record in read_json_lines(Path(spec.rpartition("=")[2]) / "episodes.jsonl"))
        out.append((label, pooled_groups(records)))
    return out


def _write_leaderboard(args: argparse.Namespace, track, runs: list, pooled: list, digests: list) -> None:
    from vlnverse.fileio import atomic_open, write_json_atomic
    from vlnverse.release.leaderboard import Entry, leaderboard, shipped_weights

    entries = [Entry(label, summary, groups, spec.rpartition("=")[2], digest)
               for (label, _, summary), (_, groups), spec, digest in zip(runs, pooled, args.folders, digests,
                                                                        strict=True)]
    command = ["vlnverse", "eval", "table", *(["--track", args.track] if args.track else []),
               *(["--leaderboard", str(args.leaderboard)] if args.leaderboard else []),
               *(["--figure", str(args.figure)] if args.figure else []), *args.folders]
    board = leaderboard(entries, track, shlex.join(command), shipped_weights())
    if args.leaderboard:
        write_json_atomic(args.leaderboard, board)
    if args.figure:
        from vlnverse.release.leaderboard_figure import sr_figure

        with atomic_open(args.figure, "wb") as handle:
            sr_figure(board).savefig(handle, format="png", dpi=110, metadata={"Software": None})
