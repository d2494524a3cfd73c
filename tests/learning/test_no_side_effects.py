"""Library calls leave the caller's process as they found it (issue 56): its environment,
matplotlib's backend, torch's thread count, the interpreter's switch interval and glibc's
malloc settings are the same after ``make``/``reset``/``step``, a panorama render and the
learned waypoint predictor, ``evaluate(workers=1)`` and ``train_imitation``.

The calls run in a fresh interpreter, so the first GL context of a process is among them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os, sys
import matplotlib
import torch

matplotlib.use("svg")           # a backend of the caller's own, not the Agg a library would pick
torch.set_num_threads(3)
sys.setswitchinterval(0.007)
# torch's own first optimizer step imports torch._dynamo, which sets TORCHINDUCTOR_CACHE_DIR
# for any torch program; taken first, so what is compared is vlnverse's doing
layer = torch.nn.Linear(2, 1)
layer(torch.ones(1, 2)).sum().backward()
torch.optim.AdamW(layer.parameters()).step()

import vlnverse.learning.allocator as allocator

mallopt_calls = []
allocator.keep_freed_memory = lambda: mallopt_calls.append(1) or True


def snapshot():
    return {"environ": dict(os.environ), "backend": matplotlib.get_backend(),
            "torch_threads": torch.get_num_threads(), "switch_interval": sys.getswitchinterval(),
            "mallopt_calls": len(mallopt_calls)}


dataset, frames, out = sys.argv[1:4]
before = snapshot()
changed = {}


def check(what):
    now = snapshot()
    diff = {k: (before[k], now[k]) for k in before if before[k] != now[k]}
    if "environ" in diff:
        old, new = diff["environ"]
        diff["environ"] = {k: (old.get(k), new.get(k)) for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if diff:
        changed[what] = diff

import vlnverse

env = vlnverse.make(dataset=dataset, split="train", task="fine", sensors=("rgb", "depth"))
obs, info = env.reset(seed=0)
env.step(info["oracle_action"])
env.close()
check("make/reset/step")

from vlnverse.agents.config import PanoramaConfig
from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints
from vlnverse.agents.panorama import Panorama, make_rig

pano = PanoramaConfig(image_size=32)
env = vlnverse.make(dataset=dataset, split="train", task="fine", sensors=make_rig(pano, ("depth",)))
obs, _ = env.reset(seed=0)
env.close()
LearnedWaypoints().predict(Panorama.from_observation(obs, pano))
check("panorama render and learned waypoints")

from vlnverse.eval.running.harness import EvalConfig, evaluate

evaluate(EvalConfig(dataset=dataset, out=out + "/eval", agent="oracle", split="train", task="fine",
                    physics=("strict",), episodes=1, workers=1, plots=1, bootstrap=10, episode_timeout=60))
check("evaluate(workers=1)")

from vlnverse.learning.imitation import ImitationConfig, train_imitation
from vlnverse.learning.models import ModelConfig

tiny = ModelConfig(embedding_dim=8, instruction_hidden=8, rgb_dim=16, depth_dim=8, hidden=32, action_embedding=8,
                   attention_dim=16, channels=(4, 8, 8))
train_imitation(ImitationConfig(kind="cma", dataset=dataset, out=out + "/train", frames=frames, epochs=1,
                                batch_size=1, rgb_size=32, depth_size=32, val_split=None, model=tiny, threads=1))
check("train_imitation")
print(json.dumps(changed))
"""


@pytest.mark.slow
def test_library_calls_leave_the_callers_process_settings_alone(fine_dataset, train_frames, tmp_path):
    frames_config, _ = train_frames
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LP_NUM_THREADS", None)  # the GL context's own settings must not appear afterwards
    env.pop("MESA_SHADER_CACHE_DISABLE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(fine_dataset), frames_config.out, str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}
