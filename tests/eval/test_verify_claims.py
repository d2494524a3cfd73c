"""``eval verify`` against forgeries of what a table shows beside the figures: usage, trace-metric
parameters, labels, privileged inputs, the agent's settings, the seed and the model. Each is
recomputed and refused, or printed as reported only."""

from __future__ import annotations

import pytest

from tests.bundled import BUNDLED_SCENES
from tests.eval.verify_helpers import forge, llm_run, run_eval, verify_cli
from vlnverse.eval.scoring.episode_record import MetricsConfig
from vlnverse.eval.scoring.trace_metrics import AORIParams
from vlnverse.eval.verification.verify import Selection, verify_run


def verify(folder, dataset, **options):
    return verify_run(folder, dataset=dataset, scenes_dir=BUNDLED_SCENES, **options)


def test_token_usage_edited_down_fails_the_transcript_rerun(verify_dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    honest = llm_run(verify_dataset, tmp_path / "llm", transcript)

    def cheaper(records):
        for record in records:
            trace = record["agent_trace"]
            trace["roles"]["decision"].update(prompt=23, completion=0)
            trace["cost_usd"] = record["metrics"]["cost"] = 0.0

    forged = forge(honest, tmp_path / "cheap", records=cheaper)
    first = verify(forged, verify_dataset)
    assert first.ok, first.mismatches  # the summaries say what the records say
    report = verify(forged, verify_dataset, rerun=True, transcript=transcript)
    assert not report.ok and "agent_trace.cost_usd: recorded 0.0, now 0.003" in report.checks["rerun"]


@pytest.mark.slow
def test_a_transcript_shows_the_actions_follow_from_it_not_which_model_wrote_it(verify_dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    honest = llm_run(verify_dataset, tmp_path / "llm", transcript)
    claimed = forge(honest, tmp_path / "gpt", run=lambda run: run.update(
        llm={"backend": "openai", "target": "gpt-4o-2024-08-06", "options": {}}))
    done = verify_cli(claimed, verify_dataset, "--rerun", "--transcript", transcript)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the agent re-run" not in done.stdout
    assert "verified (the actions follow from this transcript)" in done.stdout
    assert "reported only: which model wrote the transcript (run.json: openai:gpt-4o-2024-08-06)" in done.stdout


@pytest.mark.slow
def test_trace_metric_parameters_of_the_submitters_choosing_are_reported_and_fail_a_track(verify_dataset, tmp_path):
    out = tmp_path / "aori"
    run_eval(verify_dataset, out, physics=("tel_hop",), max_steps=200,
             metrics=MetricsConfig(aori=AORIParams(view_radius=0.5)))
    report = verify(out, verify_dataset)
    assert report.ok and any(line.startswith("trace-metric parameters not the defaults ({\"aori.view_radius\": 0.5}")
                             for line in report.reported)
    done = verify_cli(out, verify_dataset, "--track", "mini")
    assert done.returncode == 1 and "scoring       FAIL: trace_metrics: run.json" in done.stdout, done.stdout


def test_a_label_and_privileged_inputs_the_agent_does_not_have_fail(oracle_folder, verify_dataset, tmp_path):
    fair = forge(oracle_folder, tmp_path / "gpt7", run=lambda run: run.update(
        label="GPT-7 navigator (no privileged inputs)", privileged=[]))
    report = verify(fair, verify_dataset)
    assert report.checks["claims"].startswith(
        "FAIL: run.json label 'GPT-7 navigator (no privileged inputs)' is not the agent's name 'oracle'")
    assert any('privileged []: oracle with its agent config reads ["eqa_answer", "oracle_action"]' in m
               for m in report.mismatches)


@pytest.mark.slow
def test_forwards_records_filed_as_random_show_the_settings_that_make_random_walk_forward(verify_dataset, tmp_path):
    out = tmp_path / "forward"
    run_eval(verify_dataset, out, agent="forward", physics=("tel_hop",), max_steps=20)

    def as_random(run):
        run.update(agent="random", label="random", agent_config={"forward_probability": 1.0, "stop_probability": 0.0},
                   agent_settings={"action_space": "discrete", "forward_probability": 1.0, "stop_probability": 0.0})

    filed = forge(out, tmp_path / "random", run=as_random)
    done = verify_cli(filed, verify_dataset, "--rerun")
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'proven:        random with agent config {"forward_probability": 1.0, "stop_probability": 0.0} re-run ' \
           "with seed 3 takes every recorded action" in done.stdout


def test_a_seed_the_verifier_did_not_state_is_reported_only(verify_dataset, tmp_path):
    out = tmp_path / "random"
    run_eval(verify_dataset, out, agent="random", physics=("tel_hop",), max_steps=20, seed=7)
    report = verify(out, verify_dataset, rerun=True)
    assert report.ok and any(line.startswith("the seed (7, run.json's: a best run of several seeds is not excluded")
                             for line in report.reported)
    stated = verify(out, verify_dataset, rerun=True, selection=Selection(seed=7))
    assert stated.ok and not any(line.startswith("the seed") for line in stated.reported)


def test_a_transcript_for_an_agent_without_a_model_is_refused(oracle_folder, verify_dataset, tmp_path):
    from tests.cli_errors import one_error_line

    (tmp_path / "calls.jsonl").write_text('{"request": {}, "response": {}}\n')
    done = verify_cli(oracle_folder, verify_dataset, "--transcript", tmp_path / "calls.jsonl")
    assert done.returncode == 2 and "--transcript: oracle is not an LLM agent" in one_error_line(done.stderr)
    assert "follow from this transcript" not in done.stdout
