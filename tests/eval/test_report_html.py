"""summary.json / summary.md (paper Tables 5 and 6) and the HTML index, in headless Chromium."""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest

from vlnverse.eval.reporting.html_index import render_index
from vlnverse.eval.reporting.report import markdown_tables, summarize, summary_markdown, table_data

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def record(i, task, physics, sr, spl=None, split="test", **metrics):
    spl = sr * 0.9 if spl is None else spl
    base = {"TL": 10.0 + i, "NE": 1.0 if sr else 5.0, "NE_euclidean": 1.0, "SR": sr, "OSR": 1.0, "SPL": spl,
            "nDTW": 0.5, "SDTW": 0.5 * sr, "CR": 0.1, "steps": 40, "nav_steps": 39, "collision_count": 4.0}
    base.update(metrics)
    return {"episode_id": f"{task}-{i}", "task": task, "split": split, "physics": physics, "metrics": base,
            "fail_reason": "stop", "instruction": f"Go to room {i}."}


def records():
    out = []
    for physics, srs in (("strict", (1, 0, 0, 0)), ("tel_hop", (1, 1, 1, 0))):
        for task in ("fine", "coarse"):
            out += [record(i, task, physics, float(s)) for i, s in enumerate(srs)]
        out.append(record(0, "long_horizon", physics, 0.0, SR_1=1.0, SR_2=0.0, SR_3=None, SR_All=0.0, SR_Ordered=0.0))
        out.append(record(1, "long_horizon", physics, 1.0, SR_1=1.0, SR_2=1.0, SR_3=1.0, SR_All=1.0, SR_Ordered=1.0))
        out.append(record(2, "long_horizon", physics, 0.0, SR_1=0.0, SR_2=None, SR_3=None, SR_All=0.0, SR_Ordered=0.0))
    return out


RUN = {"agent": "test-agent", "dataset": "/data/x", "physics": ["strict", "tel_hop"], "seed": 0}


def test_summary_values_and_order_independence():
    rows = records()
    summary = summarize(rows, RUN, n_boot=200)
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert summarize(shuffled, RUN, n_boot=200) == summary
    groups = {(g["task"], g["physics"]): g["metrics"] for g in summary["overall"]}
    assert groups[("fine", "strict")]["SR"]["mean"] == 0.25
    assert groups[("fine", "tel_hop")]["SR"]["mean"] == 0.75
    lh = groups[("long_horizon", "tel_hop")]
    # SR_n is conditional: SR_2 over episodes that reached goal 1, SR_3 over those that reached 2.
    assert (lh["SR_1"]["mean"], lh["SR_2"]["mean"], lh["SR_3"]["mean"]) == (2 / 3, 0.5, 1.0)
    assert (lh["SR_1"]["n"], lh["SR_2"]["n"], lh["SR_3"]["n"]) == (3, 2, 1)
    assert groups[("fine", "strict")]["CR"]["mean"] == pytest.approx(4 / 39)  # pooled


def test_markdown_tables_put_tel_hop_and_strict_side_by_side():
    summary = summarize(records(), RUN, n_boot=100)
    md = summary_markdown(summary)
    fine = md.split("#### Fine-grained task")[1].split("####")[0]
    lines = [line for line in fine.splitlines() if line.startswith("| test-agent")]
    assert lines == [
        "| test-agent | Tel-Hop | 11.50 | 2.00 | 75.00 | 100.00 | 67.50 | 50.00 | 10.26 | 4 |",
        "| test-agent | Strict | 11.50 | 4.00 | 25.00 | 100.00 | 22.50 | 50.00 | 10.26 | 4 |",
    ]
    long = md.split("#### Long-horizon")[1]
    assert "| SR_1 | SR_2 | SR_3 | SR_All↑ | SR_Ordered↑ | n |" in long
    assert "| test-agent | Tel-Hop | 11.00 | 3.67 | 33.33 | 100.00 | 30.00 | 50.00 | 10.26 | 66.67 | 50.00 | 100.00 | 33.33 | 33.33 | 3 |" in long
    assert "Table 5" in md and "Table 6" in md and "Details" in md
    assert "Success: STOP" in md and "EQA:" not in md

    # Several agents in one table (the demo's report).
    both = markdown_tables([("oracle", summary), ("random", summary)])
    fine_rows = [line.split(" | ")[:2] for line in both.split("#### Fine-grained task")[1].split("####")[0].splitlines()
                 if line.startswith("| oracle") or line.startswith("| random")]
    assert fine_rows == [["| oracle", "Tel-Hop"], ["| oracle", "Strict"], ["| random", "Tel-Hop"],
                         ["| random", "Strict"]]
    header, body = table_data([("a", summary)], "long_horizon")
    assert header[-6:] == ["SR_1", "SR_2", "SR_3", "SR_All↑", "SR_Ordered↑", "n"] and len(body) == 2


def test_the_legend_follows_the_tasks_of_the_run():
    eqa = [{**record(i, "eqa", "tel_hop", 0.0), "outcome": "correct"} for i in range(2)]
    eqa_only = summary_markdown(summarize(eqa, RUN, n_boot=20))
    assert "Success: STOP" not in eqa_only and "EQA: an episode is correct" in eqa_only
    mixed = summary_markdown(summarize(eqa + records(), RUN, n_boot=20))
    assert "Success: STOP" in mixed and "EQA: an episode is correct" in mixed

def test_html_escapes_text():
    rows = records()
    rows[0]["instruction"] = 'Walk <script>alert("x")</script> & stop'
    rows[0]["error"] = "<b>bad</b>"
    page = render_index(rows, title="t <i>", meta="m")
    assert "<script>alert" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert "&lt;b&gt;bad&lt;/b&gt;" in page and "<title>t &lt;i&gt;</title>" in page
    assert page.count("<tr data-i=") == len(rows)
    assert "http://" not in page and "https://" not in page  # no external assets


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium is not installed (Debian: apt-get install -y chromium); "
                "the HTML index was not checked in a browser")


def open_headless(page, tmp_path, fragment=""):
    """The DOM after load and the browser's console lines."""
    result = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chrome-profile'}", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri() + fragment],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    return result.stdout, console


def test_index_opens_in_headless_chromium(oracle_run, tmp_path):
    page = oracle_run.index_html
    dom, console = open_headless(page, tmp_path)
    assert console == []
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-ready="1"' in body and "data-errors" not in body
    assert f'data-rows="{len(oracle_run.records)}"' in body
    assert 'data-broken-images="0"' in body
    for rec in oracle_run.records:
        assert f">{rec['episode_id']}</a></td>" in dom  # linked to its viewer page
    assert dom.count('class="thumb"') == 10
    # Sorting (the same code a header click runs), via the page's #sort= fragment.
    dom, console = open_headless(page, tmp_path, "#sort=steps:desc")
    assert console == []
    steps = [float(s) for s in re.findall(r'<td class="num" data-v="([0-9.]+)">\d+</td><td data-v="(?:stop|error|collision|step_budget)', dom)]
    assert 'data-sorted="steps:desc"' in dom
    assert len(steps) == len(oracle_run.records) and steps == sorted(steps, reverse=True)


def test_a_broken_page_is_caught(tmp_path):
    page = tmp_path / "index.html"
    text = render_index(records(), title="t").replace("var body=document.body;", "var body=document.body;nope();")
    page.write_text(text)
    _, console = open_headless(page, tmp_path)
    assert any("nope is not defined" in line for line in console)


def test_undefined_metrics_are_left_out_of_the_details_not_printed_as_nan():
    summary = summarize([record(i, "fine", "strict", 0.0) for i in range(2)], RUN, n_boot=50)
    nan = float("nan")
    summary["groups"][0]["metrics"]["CR"] = {"mean": nan, "ci_low": nan, "ci_high": nan, "n": 0}
    summary["groups"][0]["metrics"]["SPL"].update(ci_low=None, ci_high=None)
    details = summary_markdown(summary).split("### Details")[1]
    assert "nan" not in details.lower() and "CR " not in details
    assert "SR 0.00 [0.00, 0.00]" in details and "SPL 0.00;" in details
