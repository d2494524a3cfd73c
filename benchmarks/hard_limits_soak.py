"""Soak of the eval harness's hard limits against a hostile model server.

``vlnverse eval`` (a CLI subprocess) runs the ``text_history`` agent over a dataset of the
bundled scenes with ``--workers 2 --concurrency 4`` against a loopback server that answers
each request, chosen by its hash, in one of these ways: a usable reply, an empty one, never
(it holds the connection), 5 MB, invalid UTF-8, an infinite usage count, JSON nested 30,000
levels deep, an HTTP 500, or slowly (2 s). While it runs, every process of the run's tree is
watched for its peak resident memory (``VmHWM``). Figures:

- ``soak.records``: records written (each episode under each physics mode: all of them);
- ``soak.wall_s`` against its bound, episodes x ``--episode-timeout`` / (workers x concurrency);
- ``soak.peak_rss_mb_per_worker``: the largest peak of a worker process;
- ``soak.hung_processes``: processes of the run still alive after it exited (0);
- ``soak.largest_record_kb``: the longest line of ``episodes.jsonl``.

Usage: ``python benchmarks/hard_limits_soak.py [--episodes 200] [--episode-timeout 30]``
(the dataset holds ``--per-scene`` trajectories per bundled scene; the run takes a seeded
sample of episodes x physics modes). Prints ``BENCH`` lines as the other benchmarks do.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vlnverse.llm.loopback import LoopbackServer, Reply  # noqa: E402

KEY_ENV = "VLNVERSE_SOAK_KEY"
PHYSICS = ("strict", "tel_hop")


def completion(content: str, usage: str = '{"prompt_tokens": 10, "completion_tokens": 5}') -> bytes:
    """A chat completion body of ``content`` with ``usage`` written as given (JSON text)."""
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
    head = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o", "choices": [choice]})
    return (head[:-1] + f', "usage": {usage}}}').encode()


def hostile(body: dict) -> Reply:
    """One of nine answers, chosen by the request's hash (a re-run asks the same)."""
    prompt = json.dumps(body["messages"][-1]["content"])
    kind = hashlib.sha256(prompt.encode()).digest()[0] % 9
    options = prompt.split("exactly one of: ")[-1].split(".")[0].split(", ")
    good = json.dumps({"thought": "on", "summary": "on", "action": options[0].strip('"\\ ')})
    return [
        Reply(content=good),
        Reply(content=""),
        Reply(content=good, delay_s=3600),  # never answers
        Reply(raw=completion("x" * 5_000_000)),
        Reply(raw=completion("SENTINEL").replace(b"SENTINEL", b"\xff\xfe\xc3(")),
        Reply(raw=completion(good, '{"prompt_tokens": 1e999, "completion_tokens": 1}')),
        Reply(raw=b'{"choices": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"),
        Reply(status=500),
        Reply(content=good, delay_s=2.0),
    ][kind]


def tree(root: int) -> set[int]:
    """``root`` and its descendants now."""
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="records (episodes x physics modes) to run")
    parser.add_argument("--per-scene", type=int, default=8, help="trajectories per bundled scene in the dataset")
    parser.add_argument("--episode-timeout", type=float, default=30.0)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run's output in this folder")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-soak"
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        from vlnverse.tasks.datagen import DatagenConfig, run_datagen
        from vlnverse.tasks.generate import GenerationConfig

        dataset = folder / "dataset"
        if not (dataset / "manifest.json").is_file():
            run_datagen(DatagenConfig(scenes=str(REPO / "assets" / "scenes"), out=str(dataset), seed=0,
                                      generation=GenerationConfig(per_scene=args.per_scene)))
        total = json.loads((dataset / "manifest.json").read_text())["total_episodes"]
        episodes = min(total, -(-args.episodes // len(PHYSICS)))
        config = folder / "agent.json"
        config.write_text(json.dumps({"panorama": {"image_size": 64, "depth_stride": 2}}))
        out = folder / "run"
        with LoopbackServer(hostile) as server:
            command = [sys.executable, "-m", "vlnverse", "eval", "--dataset", str(dataset), "--agent",
                       "text_history", "--agent-config", str(config), "--episodes", str(episodes),
                       "--physics", ",".join(PHYSICS), "--max-steps", str(args.max_steps), "--plots", "0",
                       "--no-progress", "--workers", str(args.workers), "--concurrency", str(args.concurrency),
                       "--episode-timeout", str(args.episode_timeout), "--out", str(out),
                       "--llm", f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=1"]
            started = time.monotonic()
            log = (folder / "eval.log").open("w")  # a file: a pipe nobody reads would block the run's logging
            process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log,
                                       env={**os.environ, "PYTHONPATH": str(REPO)})
            peaks: dict[int, float] = {}
            while process.poll() is None:
                for pid in tree(process.pid) - {process.pid}:
                    peak = peak_rss_mb(pid)
                    if peak is not None:
                        peaks[pid] = max(peaks.get(pid, 0.0), peak)
                time.sleep(0.5)
            wall = time.monotonic() - started
            log.close()
            err = (folder / "eval.log").read_text()
            calls = server.calls
        hung = [pid for pid in peaks if alive(pid)]
        lines = (out / "episodes.jsonl").read_bytes().splitlines() if (out / "episodes.jsonl").is_file() else []
        records = [json.loads(line) for line in lines]
        reasons: dict[str, int] = {}
        for record in records:
            reasons[record["fail_reason"]] = reasons.get(record["fail_reason"], 0) + 1
        bound = episodes * len(PHYSICS) * args.episode_timeout / (args.workers * args.concurrency)
        print(f"exit code {process.returncode}; {calls} model calls; fail reasons {reasons}; "
              f"{len(peaks)} worker process(es) over the run (replacements included); load {os.getloadavg()}")
        if process.returncode:
            print(err[-3000:])
        print(f"BENCH soak.records {len(records)} records target == {episodes * len(PHYSICS)}")
        print(f"BENCH soak.wall_s {wall:.0f} s target <= {bound:.0f}")
        print(f"BENCH soak.peak_rss_mb_per_worker {max(peaks.values(), default=0):.0f} MiB target <= 2048")
        print(f"BENCH soak.hung_processes {len(hung)} processes target == 0")
        print(f"BENCH soak.largest_record_kb {max((len(x) for x in lines), default=0) / 1024:.0f} kB target <= 4096")


if __name__ == "__main__":
    main()
