"""``--preset paper`` resolves to the paper's settings (§5.2, §5.5, A.2.4); options override it."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from vlnverse.cli import build_parser  # noqa: E402
from vlnverse.cli.train import build_config, build_online_config  # noqa: E402
from vlnverse.errors import ConfigError  # noqa: E402


def parse(*args: str):
    return build_parser().parse_args(["train", *args, "--dataset", "DS", "--out", "RUN"])


def test_paper_preset_is_the_papers_offline_settings():
    config = build_config(parse("cma", "--preset", "paper"))
    # §5.2: "batch size of 2", "AdamW with a learning rate of 1×10^-4", "capped at 200 steps";
    # C.2.1: RGB 224, depth 256.
    assert (config.batch_size, config.lr, config.max_steps) == (2, 1e-4, 200)
    assert (config.rgb_size, config.depth_size) == (224, 256)
    assert config.prerender_config("train").max_steps == 200
    assert build_config(parse("seq2seq", "--preset", "paper", "--batch-size", "8")).batch_size == 8


def test_paper_preset_is_the_papers_online_settings():
    config = build_online_config(parse("waypoint_bert", "--online", "--preset", "paper"))
    # §5.5: batch of 4 episodes; A.2.4: MAX_TRAJ_LEN 35, SCHEDULE_RATIO 0.85, DECAY_TIME 4; lr 1e-4.
    assert (config.num_envs, config.max_traj_len, config.lr) == (4, 35, 1e-4)
    assert (config.schedule_ratio, config.decay_time, config.image_size, config.views) == (0.85, 4, 224, 12)


def test_executor_ray_puts_the_sub_envs_on_ray():
    config = build_online_config(parse("waypoint_bert", "--online", "--executor", "ray", "--ray-address", "auto"))
    assert (config.vector, config.ray_address) == ("ray", "auto")
    assert build_online_config(parse("waypoint_bert", "--online", "--vector", "sync")).vector == "sync"


def test_cpu_preset_trains_the_smoke_models_to_convergence_with_early_stopping():
    config = build_config(parse("cma", "--preset", "cpu", "--task", "fine,coarse"))
    assert (config.rgb_size, config.depth_size, config.batch_size, config.epochs) == (64, 64, 4, 30)
    # model selection on 120 episodes of val_seen and val_unseen, patience 8 (40 and 5 cut CMA short on mini)
    assert (config.patience, config.val_split, config.val_episodes, config.task) == \
        (8, "val_seen,val_unseen", 120, "fine,coarse")
    assert build_config(parse("cma", "--preset", "cpu", "--val-split", "val_unseen")).val_split == "val_unseen"
    assert build_config(parse("cma", "--preset", "smoke")).val_split == "val_unseen"
    assert config.model == build_config(parse("cma", "--preset", "smoke")).model
    # every core by default (threads None: torch's, resolved when training starts); side by side: --threads 1
    assert build_config(parse("cma", "--preset", "cpu")).threads is None
    assert build_config(parse("cma", "--preset", "cpu", "--threads", "1")).threads == 1
    # one training process per core (procs None), each on its share; side by side: --procs 1
    assert build_config(parse("cma", "--preset", "cpu")).procs is None
    assert build_config(parse("cma", "--preset", "cpu", "--procs", "1")).procs == 1
    assert build_config(parse("cma", "--preset", "smoke", "--procs", "auto")).procs is None
    assert build_config(parse("cma", "--preset", "smoke")).procs == 1
    assert build_config(parse("cma", "--preset", "cpu", "--patience", "2")).patience == 2
    assert build_config(parse("cma", "--preset", "cpu", "--patience", "0")).patience is None
    # without validation there is nothing to stop on: the preset's patience goes, an explicit one is refused
    assert build_config(parse("cma", "--preset", "cpu", "--val-split", "none")).patience is None
    with pytest.raises(ConfigError, match="patience needs a validation split"):
        build_config(parse("cma", "--preset", "cpu", "--val-split", "none", "--patience", "3"))
