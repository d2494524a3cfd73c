"""What the ``eval verify`` tests share: a seeded run, a forger's edit of a folder (records and
run.json changed, then the summaries recomputed as the harness writes them), and the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bundled import BUNDLED_SCENES, REPO
from vlnverse.eval.running.harness import EvalConfig, evaluate, write_reports


def run_eval(dataset: Path, out: Path, agent_object: Any = None, **changes: Any) -> Any:
    """The oracle (or ``changes["agent"]``, played by ``agent_object``) on a seeded sample of 3 episodes."""
    config = dict(dataset=str(dataset), out=str(out), agent="oracle", episodes=3, plots=0, seed=3,
                  scenes_dir=str(BUNDLED_SCENES))
    return evaluate(EvalConfig(**{**config, **changes}), agent=agent_object)


def llm_run(dataset: Path, out: Path, transcript: Path) -> Path:
    """``text_history`` (ground-truth perception) on one episode, its model's calls recorded."""
    from tests.agents.conftest import SMALL, ScriptedModel, walk_then_stop
    from vlnverse.eval.registry import make_agent
    from vlnverse.llm.transcript import RecordingClient

    agent_config = {"perception": "gt", **SMALL}
    agent = make_agent("text_history", agent_config, llm=RecordingClient(ScriptedModel(walk_then_stop(2)), transcript))
    run_eval(dataset, out, agent="text_history", agent_config=agent_config, episodes=1, physics=("tel_hop",),
             task="coarse", split="test", agent_object=agent)
    return out


def read_folder(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``run.json``'s ``run`` and the records of ``episodes.jsonl``."""
    run = json.loads((folder / "run.json").read_text())["run"]
    return run, [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


def forge(folder: Path, to: Path, *, run: Callable[[dict], Any] | None = None,
          records: Callable[[list], Any] | None = None) -> Path:
    """A copy of ``folder`` at ``to`` with ``run.json``'s run and the records edited in place by
    ``run`` / ``records``, and ``summary.json`` / ``summary.md`` recomputed from them."""
    shutil.copytree(folder, to)
    document = json.loads((to / "run.json").read_text())
    edited = [json.loads(line) for line in (to / "episodes.jsonl").read_text().splitlines()]
    if run:
        run(document["run"])
    if records:
        records(edited)
    (to / "run.json").write_text(json.dumps(document))
    (to / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in edited))
    write_reports(to, edited, document["run"], seed=document["run"]["seed"])
    return to


def vlnverse(*args: Any, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m vlnverse ARGS`` (this checkout's package, from any folder)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=env)


def verify_cli(folder: Path, dataset: Path, *extra: Any, cwd: Path = REPO, timeout: float = 300
               ) -> subprocess.CompletedProcess:
    """``vlnverse eval verify FOLDER --dataset DATASET --scenes-dir <bundled scenes> EXTRA``."""
    return vlnverse("eval", "verify", folder, "--dataset", dataset, "--scenes-dir", BUNDLED_SCENES, *extra,
                    cwd=cwd, timeout=timeout)
