"""``vlnverse datagen`` options and the shipped ``datagen/*.yaml`` configs (in-process ``main``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.llm.endpoint import ChatEndpoint, serve_http
from tests.outputs import assert_drawn
from tests.tasks.test_datagen_llm import answer
from vlnverse.cli import main
from vlnverse.cli.datagen import build_config
from vlnverse.tasks.datagen import DatagenConfig
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.generate import GenerationConfig, generate_scene_episodes

DATAGEN = Path(__file__).resolve().parents[2] / "datagen"


def run_json(capsys, *args) -> dict:
    code = main(["datagen", *map(str, args), "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize("name", sorted(p.name for p in DATAGEN.glob("*.yaml")))
def test_every_shipped_config_loads_and_resolves_its_folders(name):
    config = DatagenConfig.from_file(DATAGEN / name)
    written = yaml.safe_load((DATAGEN / name).read_text(encoding="utf-8"))
    for field in ("scenes", "out"):  # relative to the config's folder as named (datagen/, not a link's target)
        assert Path(getattr(config, field)) == (DATAGEN / written[field]).resolve()
    assert config.generation.tasks  # every section parsed strictly (an unknown key would raise)


def test_the_paper_config_holds_the_paper_s_table_2_shape():
    generation = DatagenConfig.from_file(DATAGEN / "paper_splits.yaml").generation
    assert (generation.per_scene, generation.val_seen_fraction, generation.long_horizon_ratio) == (75, 0.0964, 1.0)
    assert set(generation.tasks) == {"fine", "coarse", "visual_reference", "long_horizon", "dialogue"}


def test_the_demo_config_runs_with_command_line_overrides(corpus, capsys, tmp_path):
    result = run_json(capsys, "--config", DATAGEN / "demo.yaml", "--scenes", corpus, "--out", tmp_path / "ds",
                      "--per-scene", "1", "--tasks", "coarse,visual_reference", "--no-report")
    assert result["out"] == str(tmp_path / "ds") and result["scenes_generated"] == 3 and result["episodes"] == 6
    visual = EpisodeDataset.open(tmp_path / "ds").episodes(task="visual_reference")
    # demo.yaml renders: true (the test houses are grey boxes: two shades, each a large share)
    assert_drawn(tmp_path / "ds" / visual[0].reference_image, min_colours=2, min_share=0.2)


def test_val_seen_holds_out_9_64_percent_of_a_train_scene(context, tmp_path):
    made = generate_scene_episodes(context, scene_split="train", scene_rel_path="house.usda", seed=0,
                                   config=GenerationConfig(tasks=("coarse",), per_scene=52), out_dir=tmp_path)
    splits = [e.split for e in made.episodes]
    assert len(splits) == 52 and splits.count("val_seen") == 5  # 52 × 9.64 % = 5.01
    assert splits.count("train") == 47


def test_another_config_is_refused_unless_overwrite(corpus, capsys, tmp_path):
    args = ("--scenes", corpus, "--out", tmp_path / "ds", "--per-scene", "1", "--tasks", "coarse", "--no-report")
    first = run_json(capsys, *args)
    assert main(["datagen", *map(str, args), "--seed", "1", "--no-progress"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    again = run_json(capsys, *args, "--seed", "1", "--overwrite")
    assert again["scenes_generated"] == 3 and again["episodes"] == first["episodes"]
    assert json.loads((tmp_path / "ds" / "datagen.json").read_text())["fingerprint"]["seed"] == 1


def test_llm_and_render_from_the_command_line(corpus, capsys, tmp_path):
    endpoint = ChatEndpoint(answer=answer)
    with serve_http(endpoint) as base_url:
        spec = f"openai:gpt-4o?base_url={base_url}&api_key_env=none"
        args = ("--scenes", corpus, "--out", tmp_path / "ds", "--per-scene", "1", "--tasks", "coarse",
                "--llm", spec, "--render", "--no-report")
        result = run_json(capsys, *args)
        calls = len(endpoint.requests)
        assert calls > 0 and result["llm_usage"]["calls"] == calls
        episodes = EpisodeDataset.open(tmp_path / "ds").all_episodes()
        assert len(episodes) == 3
        assert all(e.provenance.instruction_source == "llm:gpt-4o" for e in episodes)
        assert any(isinstance(m["content"], list) and any(p["type"] == "image_url" for p in m["content"])
                   for body in endpoint.requests for m in body["messages"])  # --render: views went to the model
        assert run_json(capsys, *args)["scenes_resumed"] == 3 and len(endpoint.requests) == calls


def test_command_line_options_override_the_config_file():
    args = ["datagen", "--config", str(DATAGEN / "paper_splits.yaml"), "--per-scene", "4", "--seed", "9",
            "--workers", "3", "--tasks", "fine"]
    from vlnverse.cli import build_parser

    config = build_config(build_parser().parse_args(args))
    assert (config.generation.per_scene, config.seed, config.workers, config.generation.tasks) == (4, 9, 3, ("fine",))
    assert config.generation.val_seen_fraction == 0.0964  # the rest comes from the file
