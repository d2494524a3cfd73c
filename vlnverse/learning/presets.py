"""Training presets: ``smoke`` (a CPU check in minutes), ``cpu`` (a 2-core machine's day) and
``paper`` (the paper's settings).

A preset is a mapping of :class:`~vlnverse.learning.imitation.ImitationConfig` fields
(``model`` a mapping of :class:`~vlnverse.learning.models.ModelConfig` fields); options
given on the command line override it.
"""

from __future__ import annotations

from typing import Any

from vlnverse.errors import ConfigError

PRESETS: dict[str, dict[str, Any]] = {
    # 64 px frames, small encoders, lr 1e-3: a handful of CPU epochs must move the policy,
    # which lr 1e-4 does not do in that budget. One torch thread: 6x the samples/s of two
    # on a busy 2-core machine (benchmarks/train_bench.py). 12 epochs: after 8 the policy
    # still underfits the bundled train split (step accuracy 0.71, training-episode SR 38 %;
    # 12: 0.79, 48 %; CMA, seed 1). 10 validation episodes, not 5 (one episode was 20 points
    # of val SR); the best epoch (agent.yaml) is still a noisy pick (README).
    "smoke": {"rgb_size": 64, "depth_size": 64, "batch_size": 4, "epochs": 12, "lr": 1e-3, "val_episodes": 10,
              "max_steps": 200, "threads": 1,
              "model": {"hidden": 128, "rgb_dim": 64, "depth_dim": 32, "instruction_hidden": 64,
                        "attention_dim": 64, "channels": (16, 32, 32)}},
    # The smoke models and frames trained to convergence: 30 epochs at most, stopped when val SR
    # has not improved for 8 (``patience``), validated on a seeded 120 episodes of val_seen and
    # val_unseen. On VLNVerse-mini 40 val_unseen episodes (one episode: 2.5 points) and patience 5
    # stopped CMA at epoch 9, while its SR rose from epoch 16 (docs/results-mini.md). A training that has
    # the machine to itself uses all of it: one process per core (``procs`` None, at most the
    # batch's 4 episodes), each on its share of the cores (``threads`` None); the small
    # convolutions gain little from a second thread, a second process on the other half of each
    # batch gains more (benchmarks/train_bench.py). Trainings run side by side take
    # ``--procs 1 --threads 1`` each.
    "cpu": {"rgb_size": 64, "depth_size": 64, "batch_size": 4, "epochs": 30, "patience": 8, "lr": 1e-3,
            "val_split": "val_seen,val_unseen", "val_episodes": 120, "max_steps": 200, "threads": None, "procs": None,
            "model": {"hidden": 128, "rgb_dim": 64, "depth_dim": 32, "instruction_hidden": 64,
                      "attention_dim": 64, "channels": (16, 32, 32)}},
    # §5.2 / A.2.4: batch 2, AdamW 1e-4, 200-step cap, RGB 224 / depth 256; VLN-CE's 512-d state
    # and its 45 imitation epochs.
    "paper": {"rgb_size": 224, "depth_size": 256, "batch_size": 2, "epochs": 45, "lr": 1e-4, "max_steps": 200,
              "model": {}},
}


#: Presets of :class:`~vlnverse.learning.online.trainer.OnlineConfig` (``waypoint_bert --online``).
ONLINE_PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {"image_size": 32, "num_envs": 2, "iterations": 20, "max_traj_len": 35, "lr": 1e-3, "eval_episodes": 5,
              "model": {"dim": 64, "layers": 2, "heads": 4}},
    # A.2.4: batch 4 (one episode per env), 35 decisions, schedule ratio 0.85 decayed every 4,
    # 224 px panoramas of 12 views.
    "paper": {"image_size": 224, "num_envs": 4, "iterations": 1000, "max_traj_len": 35, "lr": 1e-4,
              "schedule_ratio": 0.85, "decay_time": 4, "model": {"dim": 256, "layers": 4, "heads": 8}},
}


def preset(name: str, online: bool = False) -> dict[str, Any]:
    """A copy of preset ``name`` (of the online presets with ``online``)."""
    table = ONLINE_PRESETS if online else PRESETS
    if name not in table:
        raise ConfigError(f"unknown preset {name!r}; valid: {', '.join(table)}")
    data = dict(table[name])
    data["model"] = dict(data["model"])
    return data
