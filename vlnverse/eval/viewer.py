"""The episode viewer: one static HTML page per episode, linked from ``index.html``.

A page shows the episode (instruction, metrics, how it ended) and, step by step, what the
agent did: the panorama it saw with its candidate waypoints marked, the messages it sent
the model (images as ids) and the reply, what was parsed, the chosen action, whether a
repair or a fallback was needed, and the bird's-eye view with the path so far (SVG drawn
from the record: the reference path, the goals, the trajectory up to that step).

Panoramas are captured while the episode runs, for the episodes that get a trajectory
picture (``--plots``): a strip of the agent's RGB views, left to right from behind-left
to behind-right, as ``viewer/<episode>/step_NNN.jpg``; candidate markers are placed over
it at their headings. Pages work from disk, with no network and no script.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.eval.report import PHYSICS_TITLES
from vlnverse.fileio import write_bytes_atomic, write_text_atomic

VIEWER_DIR = "viewer"
STRIP_HEIGHT = 160
_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222;max-width:80em}
h1{font-size:1.25em}h2{font-size:1.05em;margin:1.4em 0 .4em}.meta{color:#555;font-size:.9em}
.step{border-top:1px solid #ccc;padding:.6em 0}.flag{color:#c92a2a;font-weight:600}
.pano{position:relative;display:inline-block;line-height:0}.pano img{height:160px}
.cand{position:absolute;top:0;height:100%;border-left:2px solid #e8590c}
.cand span{position:absolute;top:2px;left:2px;background:#e8590c;color:#fff;font:11px sans-serif;
padding:0 3px;line-height:14px}.cand.chosen{border-left:3px solid #2b8a3e}.cand.chosen span{background:#2b8a3e}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;font-size:.8em;max-height:22em;overflow:auto}
.cols{display:flex;gap:1em;align-items:flex-start}.cols>div{flex:1;min-width:0}
table{border-collapse:collapse;font-size:.85em}td,th{padding:.15em .5em;border-bottom:1px solid #eee;text-align:left}
details{font-size:.85em;margin:.15em 0}summary{cursor:pointer}
"""


def page_name(record: Mapping[str, Any]) -> str:
    """The page's file name (also the folder of its panorama strips)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(record["episode_id"]))
    return f"{safe}__{record['physics']}"


def _view_heading(key: str, views: int) -> float:
    """Heading (degrees, left positive, in (-180, 180]) of panorama view ``key`` (``rgb_pano_03``)."""
    index = int(key.rsplit("_", 1)[1])
    heading = (index * 360.0 / views) % 360.0
    return heading - 360.0 if heading > 180.0 else heading


def strip_x(heading_deg: float) -> float:
    """Horizontal position (0-1, left to right) of a heading in the strip."""
    h = 180.0 - (180.0 - float(heading_deg)) % 360.0  # in (-180, 180]
    return 0.5 - h / 360.0


def panorama_strip(observation: Mapping[str, Any], hfov_deg: float = 90.0) -> np.ndarray | None:
    """The observation's RGB views as one strip scaled to :data:`STRIP_HEIGHT` rows; None
    without RGB. A panoramic rig's views (``rgb_pano_NN``, evenly spaced, ``hfov_deg``
    wide: the rig's default) are cropped to the angle between neighbours and ordered so
    that heading ``h`` sits at :func:`strip_x` of the width; a single ``rgb`` view is
    returned as it is."""
    from PIL import Image

    pano = sorted(k for k in observation if k.startswith("rgb_pano_"))
    if pano:
        order = sorted(pano, key=lambda k: -_view_heading(k, len(pano)))
        width = np.asarray(observation[order[0]]).shape[1]
        keep = width * math.tan(math.radians(180.0 / len(pano))) / math.tan(math.radians(hfov_deg / 2))
        lo = max(0, int(round((width - keep) / 2)))
        crops = [np.asarray(observation[k])[:, lo:width - lo, :3] for k in order]
        strip = np.concatenate(crops, axis=1)
        strip = np.roll(strip, -crops[0].shape[1] // 2, axis=1)  # view centres on strip_x
    elif "rgb" in observation:
        strip = np.asarray(observation["rgb"])[..., :3]
    else:
        return None
    height, width = strip.shape[:2]
    scaled = Image.fromarray(np.ascontiguousarray(strip, dtype=np.uint8)).resize(
        (max(1, round(width * STRIP_HEIGHT / height)), STRIP_HEIGHT), Image.BILINEAR)
    return np.asarray(scaled)


def save_strip(path: Path, strip: np.ndarray) -> None:
    """Write a strip as a JPEG, atomically."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(strip).save(buffer, format="JPEG", quality=80)
    write_bytes_atomic(path, buffer.getvalue())


def _bev_svg(record: Mapping[str, Any], upto: int | None, size: int = 260) -> str:
    """The bird's-eye view: reference path (grey), goals (green rings), the trajectory up to
    pose ``upto`` (blue; all when None) and the agent there (red)."""
    traj = [p[:2] for p in record.get("trajectory") or []]
    ref = [p[:2] for p in record.get("reference_path") or []]
    goals = [(g["position"][:2], g.get("radius", 0.0)) for g in record.get("goals") or []]
    points = traj + ref + [g for g, _ in goals]
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0) + 2.0
    x0, y0 = min(xs) - 1.0, min(ys) - 1.0
    scale = size / span

    def pt(p: Sequence[float]) -> str:
        return f"{(p[0] - x0) * scale:.1f},{size - (p[1] - y0) * scale:.1f}"

    shown = traj if upto is None else traj[: upto + 1]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'style="background:#fafafa;border:1px solid #ccc">']
    if ref:
        parts.append(f'<polyline points="{" ".join(pt(p) for p in ref)}" fill="none" stroke="#aaa" '
                     'stroke-width="2" stroke-dasharray="4 3"/>')
    for goal, radius in goals:
        cx, cy = pt(goal).split(",")
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="{max(radius * scale, 3):.1f}" fill="none" '
                     'stroke="#2b8a3e" stroke-width="1.5"/>')
    if shown:
        parts.append(f'<polyline points="{" ".join(pt(p) for p in shown)}" fill="none" stroke="#1c7ed6" '
                     'stroke-width="2"/>')
        cx, cy = pt(shown[-1]).split(",")
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" fill="#c92a2a"/>')
    parts.append("</svg>")
    return "".join(parts)


def _messages_text(messages: Any) -> str:
    if isinstance(messages, list):
        chunks = []
        for m in messages:
            if isinstance(m, Mapping):
                chunks.append(f"[{m.get('role', '?')}]\n{m.get('content', '')}")
            else:
                chunks.append(str(m))
        return "\n\n".join(chunks)
    return "" if messages is None else str(messages)


def _chosen_id(step: Mapping[str, Any]) -> str | None:
    parsed = step.get("parsed")
    return str(parsed.get("action")) if isinstance(parsed, Mapping) and parsed.get("action") else None


def _pano_html(strip: str | None, step: Mapping[str, Any]) -> str:
    if strip is None:
        return '<p class="meta">(no panorama captured for this episode: only episodes with a ' \
               "trajectory picture get one; raise --plots)</p>"
    chosen = _chosen_id(step)
    marks = []
    for cand in step.get("candidates") or []:
        if not isinstance(cand, Mapping) or "heading_deg" not in cand:
            continue
        klass = "cand chosen" if str(cand.get("id")) == chosen else "cand"
        label = html.escape(f"{cand.get('id')} {cand.get('distance_m', '')}m")
        marks.append(f'<div class="{klass}" style="left:{100 * strip_x(cand["heading_deg"]):.1f}%" '
                     f'title="{html.escape(str(cand.get("phrase", "")), quote=True)}"><span>{label}</span></div>')
    return f'<div class="pano"><img src="{html.escape(strip, quote=True)}" alt="panorama">{"".join(marks)}</div>'


def render_episode_page(record: Mapping[str, Any], strips: Mapping[int, str]) -> str:
    """The HTML of one episode's page; ``strips`` maps step index to a strip's relative URL."""
    trace = record.get("agent_trace") if isinstance(record.get("agent_trace"), Mapping) else {}
    steps = [s for s in trace.get("steps") or [] if isinstance(s, Mapping)]
    metrics = record.get("metrics") or {}
    title = f"{record.get('episode_id')} · {PHYSICS_TITLES.get(str(record.get('physics')), record.get('physics'))}"
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(_fmt(v))}</td></tr>"
                   for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    counts = ", ".join(f"{k} {trace[k]}" for k in ("fallbacks", "repairs", "parse_failures") if k in trace)
    roles = trace.get("roles") if isinstance(trace.get("roles"), Mapping) else {}
    if len(roles) > 1:
        counts += " · tokens by role: " + ", ".join(
            f"{role} {int(c.get('prompt', 0)) + int(c.get('completion', 0))}" for role, c in roles.items()
            if isinstance(c, Mapping))
    usage = record.get("llm") or {}
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f'<p><a href="../index.html">← all episodes</a></p><h1>{html.escape(title)}</h1>',
        f'<p class="meta">task {html.escape(str(record.get("task")))} · split {html.escape(str(record.get("split")))}'
        f' · scene {html.escape(str(record.get("scene_id")))} · ended: {html.escape(str(record.get("fail_reason")))}'
        + (f' · <span class="flag">{html.escape(str(record.get("error")))}</span>' if record.get("error") else "")
        + "</p>",
        f"<p><b>Instruction.</b> {html.escape(str(record.get('instruction', '')))}</p>",
        '<div class="cols"><div>', _bev_svg(record, None), "</div><div><table>", rows, "</table>",
        f'<p class="meta">{html.escape(counts)}'
        + (f" · {usage.get('calls', 0)} calls ({usage.get('cached_calls', 0)} cached), "
           f"{usage.get('tokens', 0)} tokens, billed ${usage.get('cost_usd', 0):.4f}" if usage else "")
        + "</p></div></div>",
    ]
    actions = record.get("actions") or []
    if not steps:
        out.append(f"<h2>Actions</h2><pre>{html.escape(json.dumps(actions))}</pre>")
    for i, step in enumerate(steps):
        index = int(step.get("step", i)) if isinstance(step.get("step", i), int) else i
        flags = [f for f in ("repair", "fallback") if step.get(f)]
        flag_html = f' <span class="flag">{" + ".join(flags)}</span>' if flags else ""
        action = step.get("action", actions[i] if i < len(actions) else None)
        out += [
            f'<div class="step" id="step{index}"><h2>Step {index}{flag_html}</h2>',
            _pano_html(strips.get(i), step),
            '<div class="cols"><div>', _bev_svg(record, min(i, len(record.get("trajectory") or [1]) - 1)), "</div>",
            "<div><b>Sent to the model</b>", f"<pre>{html.escape(_messages_text(step.get('messages')))}</pre></div>",
            "<div><b>Reply</b>", f"<pre>{html.escape(str(step.get('reply', '')))}</pre>",
        ]
        if step.get("repair_reply") is not None:
            out.append(f"<b>Reply to the repair prompt</b><pre>{html.escape(str(step['repair_reply']))}</pre>")
        if isinstance(step.get("debate"), Mapping):
            out.append(f"<b>Debate</b><pre>{html.escape(_debate_text(step['debate']))}</pre>")
        out += [f"<b>Parsed</b><pre>{html.escape(json.dumps(step.get('parsed'), indent=1, default=str))}</pre>",
                f"<b>Action</b><pre>{html.escape(json.dumps(action, default=str))}</pre></div></div>",
                _discussion_html(step), "</div>"]
    out += ["</body></html>", ""]
    return "\n".join(out)


def _discussion_html(step: Mapping[str, Any]) -> str:
    """Multi-call agents: the predictions and how they were settled (``discussion``), and
    every intermediate call's question and answer (``consultations``), folded."""
    esc = html.escape
    parts = []
    talk = step.get("discussion")
    if isinstance(talk, Mapping) and talk.get("predictions"):
        rows = "".join(f"<tr><td>{esc(str(p.get('prediction')))}</td><td>{esc(str(p.get('thought', '')))}</td></tr>"
                       for p in talk["predictions"] if isinstance(p, Mapping))
        settled = "disagreed: fused and tested" if talk.get("fusion") else "no fusion"
        parts.append(f"<b>Predictions</b> ({settled}; decision {esc(str(talk.get('decision')))})<table>{rows}</table>")
    calls = [c for c in step.get("consultations") or [] if isinstance(c, Mapping)]
    for call in calls:
        messages = call.get("messages") if isinstance(call.get("messages"), list) else []
        last = messages[-1].get("content", "") if messages and isinstance(messages[-1], Mapping) else ""
        question = str(last).strip().splitlines()[0] if str(last).strip() else ""
        parts.append(f"<details><summary>{esc(str(call.get('purpose')))}: {esc(question)}</summary>"
                     f"<pre>{esc(_messages_text(messages))}</pre><b>Answer</b>"
                     f"<pre>{esc(str(call.get('reply', '')))}</pre></details>")
    if calls:
        parts.insert(len(parts) - len(calls), f"<b>Consultations ({len(calls)})</b>")
    return f"<div>{''.join(parts)}</div>" if parts else ""


def _debate_text(debate: Mapping[str, Any]) -> str:
    """A debate step (rounds, the judge, the execution mode) as lines of text."""
    lines = [f"round {r.get('round')}: TSU {r.get('tsu')} · SIB {r.get('sib_decision')} {r.get('sib')}"
             for r in debate.get("rounds") or [] if isinstance(r, Mapping)]
    lines.append(f"judge {debate.get('judge')} · override {debate.get('override', False)} · mode {debate.get('mode')}"
                 + (f" · probe {json.dumps(debate['probe'])}" if debate.get("probe") else ""))
    if debate.get("stop_verification"):
        lines.append(f"stop verification {json.dumps(debate['stop_verification'])}")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else str(value)


def write_episode_pages(out: Path, records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """Write every record's page under ``out/viewer``; returns (episode id, physics) ->
    the page's URL relative to ``out`` (for the index)."""
    links = {}
    folder = out / VIEWER_DIR
    for record in records:
        name = page_name(record)
        strips = {}
        frames = folder / name
        if frames.is_dir():
            for path in frames.glob("step_*.jpg"):
                strips[int(path.stem.split("_")[1])] = f"{name}/{path.name}"
        write_text_atomic(folder / f"{name}.html", render_episode_page(record, strips))
        links[(str(record["episode_id"]), str(record["physics"]))] = f"{VIEWER_DIR}/{name}.html"
    return links
