"""The wheel works outside the checkout (issue 56): built from the source tree, installed
into a fresh virtual environment in a temporary folder, its ``vlnverse`` command and the
files it reads at run time (scenes, the demo's CMA, the waypoint predictor, the tracks'
checksums, Table 2's generation settings) are found there.

No network: the new environment borrows this one's installed dependencies through a
``.pth`` line (a plain path: this environment's editable install of the checkout is not
activated), and the wheel is installed with ``--no-deps --no-index``."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: A quick real call: data files, a dataset from the bundled scenes and one evaluated episode.
QUICK = r"""
import sys
from pathlib import Path

import vlnverse
from vlnverse.agents.waypoints.learned.predictor import SHIPPED_CHECKPOINT
from vlnverse.cli.demo import default_scenes, shipped_agent
from vlnverse.release.build import ReleaseConfig
from vlnverse.tasks.datagen import DatagenConfig, run_datagen
from vlnverse.tasks.generate import GenerationConfig

assert "site-packages" in vlnverse.__file__, vlnverse.__file__
assert vlnverse.get_track("mini").published_digest() is not None
assert SHIPPED_CHECKPOINT.is_file() and shipped_agent("cma").is_file()
ReleaseConfig(out=sys.argv[1] + "/release").generation()  # reads Table 2's settings
run_datagen(DatagenConfig(scenes=str(default_scenes()), out=sys.argv[1] + "/ds",
                          generation=GenerationConfig(tasks=("fine",), per_scene=2)))
result = vlnverse.evaluate(vlnverse.EvalConfig(dataset=sys.argv[1] + "/ds", out=sys.argv[1] + "/run", agent="oracle",
                                               episodes=1, physics=("tel_hop",), plots=0, bootstrap=10))
print("records", len(result.records))
"""


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    pytest.importorskip("setuptools")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", str(dist)], tmp_path, env)
    wheel = next(dist.glob("vlnverse-*.whl"))
    home = tmp_path / "venv"
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env)
                .strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], tmp_path, env)
    work = tmp_path / "elsewhere"
    work.mkdir()
    command = str(home / "bin" / "vlnverse")
    assert "--scenes" in _run([command, "demo", "--help"], work, env)
    assert "--track" in _run([command, "release", "build", "--track", "mini", "--help"], work, env)
    assert _run([str(python), "-c", QUICK, str(work)], work, env).splitlines()[-1] == "records 1"
