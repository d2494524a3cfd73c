"""``eval verify`` against a submitter who forges: each test is one way of making a folder say
something its agent did not do, and what verify answers. The forger recomputes the summaries
after every edit (:func:`forge`), as anyone with this package can."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from tests.bundled import BUNDLED_SCENES
from tests.eval.verify_helpers import forge, llm_run, read_folder, run_eval, verify_cli, vlnverse
from vlnverse.eval.verification.verify import RecordedActions, verify_run
from vlnverse.release.table3 import load_runs

EVIL_AGENT = '''import pathlib
pathlib.Path(__file__).with_name("imported").write_text("the folder's code ran")


class Agent:
    action_space = "discrete"
    sensors = ()

    def reset(self, episode):
        pass

    def act(self, observation):
        return 0
'''


def verify(folder, dataset, **options):
    return verify_run(folder, dataset=dataset, scenes_dir=BUNDLED_SCENES, **options)


# 1. verify never runs code the folder names


def test_an_agent_the_folder_ships_is_never_imported(oracle_folder, verify_dataset, tmp_path):
    for name, agent in (("file", "{folder}/evil_agent.py:Agent"), ("module", "evil_agent:Agent")):
        folder = tmp_path / name

        def unset(run, agent=agent, folder=folder):
            run.update(action_space=None, agent=agent.format(folder=folder))

        forge(oracle_folder, folder, run=unset)
        (folder / "evil_agent.py").write_text(EVIL_AGENT)
        done = verify_cli(folder, verify_dataset, cwd=folder)  # a module is looked for in the current folder
        assert not (folder / "imported").exists(), f"verify imported the folder's {name}"
        assert done.returncode == 2, done.stdout
        assert done.stderr.strip().startswith("error: run.json: 'action_space' must name an action space")


MARKS = "open(__file__.rsplit('/', 1)[0] + '/imported', 'w').write(__name__)\n"
"""A module that, imported, leaves the file ``imported`` beside itself."""


@pytest.mark.slow
def test_verifying_from_inside_the_folder_imports_none_of_its_files(oracle_folder, verify_dataset, tmp_path):
    folder = tmp_path / "bundle"
    shutil.copytree(oracle_folder, folder)
    for name in ("numpy", "typing", "json", "yaml", "pybullet", "gymnasium", "scipy", "__future__"):
        (folder / f"{name}.py").write_text(MARKS)  # modules verify imports, if the folder stood in for them
    done = verify_cli(".", verify_dataset, "--rerun", cwd=folder)
    assert not (folder / "imported").exists(), f"verify imported {(folder / 'imported').read_text()}.py of the folder"
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_an_agent_config_that_names_code_is_refused_before_the_rerun(verify_dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    honest = llm_run(verify_dataset, tmp_path / "llm", transcript)
    for name, predictor in (("module", "evil_waypoints:make"), ("zen", "this:s"), ("file", "./evil_waypoints.py:make")):
        folder = forge(honest, tmp_path / name,
                       run=lambda run, p=predictor: run["agent_config"].update(waypoint_predictor=p))
        (folder / "evil_waypoints.py").write_text(MARKS)
        done = verify_cli(".", verify_dataset, "--rerun", "--transcript", transcript, cwd=folder)
        assert not (folder / "imported").exists() and "Zen of Python" not in done.stdout
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"rerun         FAIL: agent config 'waypoint_predictor': '{predictor}' is not a plain setting" \
            in done.stdout


@pytest.mark.slow
def test_a_checkpoint_that_would_run_code_is_one_error_line_and_never_runs(oracle_folder, verify_dataset, tmp_path):
    import pytest

    pytest.importorskip("torch")
    from tests.bundled import REPO
    from tests.cli_errors import one_error_line
    from tests.learning.test_weights import booby_trapped

    trapped, marker = booby_trapped(tmp_path, REPO / "assets" / "agents" / "cma" / "cma.pt")
    digest = hashlib.sha256(trapped.read_bytes()).hexdigest()

    def as_cma(run):
        relabel_as("cma")(run)
        run.update(agent_config={"checkpoint": "cma.pt", "device": "cpu"}, agent_settings=None,
                   checkpoints={"checkpoint": digest})

    folder = forge(oracle_folder, tmp_path / "cma", run=as_cma)
    done = verify_cli(folder, verify_dataset, "--rerun", "--checkpoint", trapped)
    assert not marker.exists(), "the checkpoint's code ran"
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds more than tensors and plain data (it needs" in one_error_line(done.stderr)


# 2. every selected episode needs a record, and the verifier states the selection


@pytest.mark.slow
def test_dropping_the_failures_leaves_missing_records_and_fails(oracle_folder, verify_dataset, tmp_path):
    folder = forge(oracle_folder, tmp_path / "picked", records=lambda records: records.pop(0))
    done = verify_cli(folder, verify_dataset)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "records       FAIL: 1 of 6 selected episode(s) have no record" in done.stdout
    assert "resimulation  ok (5 episodes re-simulated)" in done.stdout  # only what was replayed

    report = verify(folder, verify_dataset, allow_partial=True)
    assert report.ok and report.checks["records"].startswith("ok (partial: 1 of 6 selected episode(s)")


@pytest.mark.slow
def test_a_wider_selection_claimed_in_run_json_needs_its_records(oracle_folder, verify_dataset, tmp_path):
    widened = forge(oracle_folder, tmp_path / "all", run=lambda run: run.update(episodes=None))
    done = verify_cli(widened, verify_dataset)
    assert done.returncode == 1 and "selected episode(s) have no record" in done.stdout, done.stdout + done.stderr
    slide = forge(oracle_folder, tmp_path / "slide", run=lambda run: run["physics"].append("slide"))
    report = verify(slide, verify_dataset)
    assert report.checks["records"].startswith("FAIL: 3 of 9 selected episode(s) have no record")


@pytest.mark.slow
def test_the_verifier_states_the_selection_not_the_submitter(oracle_folder, verify_dataset, tmp_path):
    done = verify_cli(oracle_folder, verify_dataset, "--split", "all", "--episodes", "all")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stated by the verifier" in done.stdout and "selected episode(s) have no record" in done.stdout

    from vlnverse.eval.verification.verify import Selection

    complete = tmp_path / "test_split"
    run_eval(verify_dataset, complete, split="test", task="fine,coarse", episodes=None, physics=("tel_hop",))
    report = verify(complete, verify_dataset, selection=Selection(split="test", task="fine,coarse", episodes="all"))
    assert report.ok, report.mismatches
    assert report.selection.startswith("split test · task fine,coarse · physics tel_hop · episodes all")
    report = verify(complete, verify_dataset, selection=Selection(split="test", task="fine,coarse", seed=4))
    assert report.checks["records"] == "FAIL: run.json seed 3, the verifier requires seed 4"


@pytest.mark.slow
def test_a_generous_success_radius_is_printed_and_fails_when_the_verifier_states_the_benchmarks(
        verify_dataset, tmp_path):
    out = tmp_path / "wide"
    run_eval(verify_dataset, out, agent="forward", physics=("tel_hop",), max_steps=20, success_distance=30.0)
    done = verify_cli(out, verify_dataset)
    assert done.returncode == 0 and "success distance 30.0 m" in done.stdout, done.stdout + done.stderr
    done = verify_cli(out, verify_dataset, "--success-distance", "3", "--max-steps", "20")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "scoring       FAIL: success_distance: run.json 30.0, the verifier requires 3.0" in done.stdout


# 3. the agent: only --rerun checks it


def relabel_as(agent):
    def edit(run):
        run.update(agent=agent, label=agent, agent_config={}, agent_settings={"action_space": "discrete"},
                   privileged=[])
    return edit


@pytest.mark.slow
def test_the_oracles_records_under_another_agents_name_fail_the_rerun(oracle_folder, verify_dataset, tmp_path):
    for agent in ("random", "forward"):
        folder = forge(oracle_folder, tmp_path / agent, run=relabel_as(agent))
        assert verify(folder, verify_dataset).ok  # consistent: the actions do give these results
        done = verify_cli(folder, verify_dataset, "--rerun")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "rerun         FAIL: scene_" in done.stdout and f"(re-run {agent})" in done.stdout


@pytest.mark.slow
def test_hand_made_actions_completed_by_verifys_own_replay_fail_the_rerun(verify_dataset, tmp_path):
    honest = tmp_path / "honest"
    run_eval(verify_dataset, honest, agent="random", physics=("tel_hop",), max_steps=30)
    assert verify(honest, verify_dataset, rerun=True).checks["rerun"] == \
        "ok (3 episodes re-run by random: every action the same)"
    _, records = read_folder(honest)
    made = {(r["episode_id"], r["physics"]): {**r, "actions": [1, 1, 0]} for r in records}  # walk, walk, stop
    forged = tmp_path / "forged"
    run_eval(verify_dataset, forged, agent="random", physics=("tel_hop",), max_steps=30,
             agent_object=RecordedActions(made, "discrete"))
    assert verify(forged, verify_dataset).ok
    report = verify(forged, verify_dataset, rerun=True)
    assert not report.ok and report.checks["rerun"].startswith("FAIL: ") and "actions" in report.checks["rerun"]


def test_a_best_of_two_seeds_merge_fails_the_rerun(verify_dataset, tmp_path):
    runs = {}
    for seed in (3, 4):
        runs[seed] = tmp_path / f"seed{seed}"
        run_eval(verify_dataset, runs[seed], agent="random", physics=("tel_hop",), max_steps=30, seed=seed,
                 episodes=None, split="test", task="fine")
    _, second = read_folder(runs[4])
    better = {r["episode_id"]: r for r in second}

    def best(records):
        for index, record in enumerate(records):
            other = better[record["episode_id"]]
            if index == 0 or other["metrics"]["NE"] < record["metrics"]["NE"]:
                records[index] = other

    merged = forge(runs[3], tmp_path / "merged", records=best)
    report = verify(merged, verify_dataset, rerun=True)
    assert not report.ok and report.checks["rerun"].startswith("FAIL: ")


@pytest.mark.slow
def test_a_checkpoint_agent_is_re_run_from_the_verifiers_copy(verify_dataset, tmp_path):
    import pytest

    pytest.importorskip("torch")
    from tests.bundled import REPO
    from vlnverse.eval.registry import load_agent_config

    weights = REPO / "assets" / "agents" / "cma" / "cma.pt"
    out = tmp_path / "cma"
    run_eval(verify_dataset, out, agent="cma", agent_config=load_agent_config(weights.parent / "agent.yaml"),
             episodes=1, physics=("tel_hop",), max_steps=8)
    run, _ = read_folder(out)
    assert run["checkpoints"] == {"checkpoint": hashlib.sha256(weights.read_bytes()).hexdigest()}
    copy = tmp_path / "mine.pt"
    shutil.copyfile(weights, copy)
    report = verify(out, verify_dataset, rerun=True, checkpoints={"checkpoint": copy})
    assert report.ok and report.checks["rerun"] == "ok (1 episodes re-run by cma: every action the same)"
    with copy.open("ab") as handle:
        handle.write(b"\0")
    report = verify(out, verify_dataset, rerun=True, checkpoints={"checkpoint": copy})
    assert report.checks["rerun"].startswith("FAIL: checkpoint: your copy has sha256")
    done = verify_cli(out, verify_dataset, "--rerun")
    assert done.returncode == 2 and "needs your copy of its checkpoint (--checkpoint FILE" in done.stderr


# 4. inputs are checked against the verifier's copy


def test_a_forged_dataset_fails_against_the_published_digest(verify_dataset, tmp_path):
    forged = tmp_path / "forged_dataset"
    shutil.copytree(verify_dataset, forged)
    manifest = json.loads((forged / "manifest.json").read_text())
    manifest["note"] = "not the published dataset"
    (forged / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "run"
    run_eval(forged, out, physics=("tel_hop",), episodes=1)
    published = hashlib.sha256((verify_dataset / "manifest.json").read_bytes()).hexdigest()
    done = verify_cli(out, forged, "--expect-dataset", published)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "inputs        FAIL: dataset: sha256" in done.stdout and "expected" in done.stdout


def test_a_releases_sha256sums_pins_the_dataset_and_its_scenes(oracle_folder, verify_dataset, tmp_path):
    def line(path, name):
        return f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {name}"

    scenes = sorted(BUNDLED_SCENES.glob("*/scene.usdc"))
    published = [line(verify_dataset / "manifest.json", "dataset/manifest.json")]
    published += [line(p, f"scenes/{p.parent.name}/{p.name}") for p in scenes]
    sums = tmp_path / "SHA256SUMS"
    sums.write_text("\n".join(published) + "\n")
    assert verify(oracle_folder, verify_dataset, release_sums=sums).ok
    sums.write_text("\n".join([published[0], *(f"{'0' * 64}{text[64:]}" for text in published[1:])]) + "\n")
    report = verify(oracle_folder, verify_dataset, release_sums=sums)
    assert report.checks["inputs"].startswith("FAIL: scene:") and "0000000000 in SHA256SUMS" in report.checks["inputs"]


def test_a_named_track_states_its_selection_and_its_published_checksums(oracle_folder, verify_dataset):
    done = verify_cli(oracle_folder, verify_dataset, "--track", "mini")  # the bundled dataset is not the track's
    assert done.returncode == 1, done.stdout + done.stderr
    assert "selection     split val_seen,val_unseen,test · task fine,coarse · physics strict, tel_hop · " \
           "episodes all · seed 0 (split, task, physics, episodes, seed stated by the verifier" in done.stdout
    assert "inputs        FAIL: dataset: sha256" in done.stdout and "in SHA256SUMS" in done.stdout


def test_a_run_without_input_checksums_fails(oracle_folder, verify_dataset, tmp_path):
    folder = forge(oracle_folder, tmp_path / "no_inputs", run=lambda run: run.pop("inputs"))
    report = verify(folder, verify_dataset)
    assert report.checks["inputs"].startswith("FAIL: run.json records no input checksums")


def test_scenes_come_from_the_verifiers_dataset_not_run_json(bundled_dataset, tmp_path):
    scenes = tmp_path / "scenes"
    shutil.copytree(BUNDLED_SCENES, scenes)
    for scene in scenes.glob("*/scene.usdc"):
        with scene.open("ab") as handle:  # other bytes, same geometry: a stand-in for edited scenes
            handle.write(b"forged")
    out = tmp_path / "run"
    run_eval(bundled_dataset, out, physics=("tel_hop",), episodes=1, scenes_dir=str(scenes))
    report = verify_run(out, dataset=bundled_dataset)  # no --scenes-dir: the dataset's own scenes
    assert report.checks["inputs"].startswith("FAIL: scene:") and "of your copy" in report.checks["inputs"]


# 5. every file of the folder is checked


def test_a_summary_md_that_says_something_else_fails(oracle_folder, verify_dataset, tmp_path):
    folder = tmp_path / "md"
    shutil.copytree(oracle_folder, folder)
    text = (folder / "summary.md").read_text()
    (folder / "summary.md").write_text(text.replace("| Tel-Hop |", "| Tel-Hop | SR 100 % |", 1))
    report = verify(folder, verify_dataset)
    assert report.checks["summary"].startswith("FAIL: summary.md: line ")


def test_a_missing_summary_fails(oracle_folder, verify_dataset, tmp_path):
    folder = tmp_path / "nosummary"
    shutil.copytree(oracle_folder, folder)
    (folder / "summary.json").unlink()
    report = verify(folder, verify_dataset)
    assert report.checks["summary"] == "FAIL: no summary.json: the summary cannot be checked"


def test_a_bundle_member_that_differs_from_sha256sums_fails(oracle_folder, verify_dataset, tmp_path):
    import tarfile

    archive = tmp_path / "results.tar.gz"
    assert vlnverse("eval", "bundle", oracle_folder, "--to", archive).returncode == 0
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (unpacked / "environment.json").write_text(json.dumps({"vlnverse": "9.9", "python": "3.99"}))
    report = verify(unpacked, verify_dataset)
    assert report.checks["sha256sums"] == "FAIL: environment.json: sha256 differs from SHA256SUMS's"


def test_a_summary_that_renames_its_agent_fails_and_cannot_label_a_table_row(oracle_folder, verify_dataset,
                                                                               tmp_path):
    folder = tmp_path / "gpt7"
    shutil.copytree(oracle_folder, folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary["run"]["agent"] = "GPT-7 navigator"
    (folder / "summary.json").write_text(json.dumps(summary))
    report = verify(folder, verify_dataset)
    assert report.checks["summary"].startswith('FAIL: summary.json run.agent: recorded "oracle", now "GPT-7 navigator"')
    done = vlnverse("eval", "table", folder, "--json")
    assert done.returncode == 2 and "GPT-7" not in done.stdout
    assert "summary.json's run section is not run.json's" in done.stderr
    assert load_runs([str(oracle_folder)])[0][:2] == ("oracle", "oracle")  # labelled by run.json's agent
