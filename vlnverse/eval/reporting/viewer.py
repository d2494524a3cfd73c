"""The episode viewer: one static HTML page per episode, linked from ``index.html``.

A page shows the episode (instruction, metrics, how it ended) and, step by step, what the
agent did: the frame it saw, the action in words ("FORWARD 0.25 m", "C: 0.98 m at +60°"),
what a collision hit, and a bird's-eye inset of the scene (walls, rooms, objects) with the
reference path, the goals and the path so far. LLM agents add their candidate waypoints
(marked on the frame), the messages sent to the model (images as ids), the reply, what was
parsed, repairs and fallbacks.

Frames are captured while the episode runs, for the episodes that get a trajectory picture
(``--plots``), as ``viewer/<episode>/step_NNN.jpg``: a strip of the agent's own RGB views
(left to right from behind-left to behind-right), or, for an agent without an RGB camera, a
view rendered for people from its pose. An episode's frames stop when they reach
:data:`FRAME_BUDGET_BYTES`; ``frames.json`` beside them says where they came from and where
they stopped. Pages work from disk, with no network and no script.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.eval.reporting.report import PHYSICS_TITLES, is_percent
from vlnverse.eval.reporting.viewer_map import MAPS_DIR, read_scene_map
from vlnverse.fileio import write_bytes_atomic, write_text_atomic

VIEWER_DIR = "viewer"
#: Pixel size of each step's bird's-eye view, and the id of its map layer drawn once per page.
STEP_MAP_SIZE = 220
STEP_MAP_LAYER = "step-map"
MAX_STRIP_HEIGHT = 480
FRAME_BUDGET_BYTES = 8 * 2**20
"""Most bytes of JPEG frames one episode's page gets (about 200 panorama strips or 800 views)."""
RENDERED_FRAMES = 60
"""Most frames rendered for people per episode, for agents without an RGB camera: each costs a
render the agent did not ask for (about 8 ms of CPU), so a 500-step wanderer stays cheap."""
FRAMES_FILE = "frames.json"
VIEW_CAMERA = {"width": 160, "height": 120, "hfov_deg": 90.0}
"""The camera rendered for the page of an agent that has no RGB camera of its own: the view
ahead, or, for waypoint agents (which choose among candidates all around), four views 90°
apart making a 360° strip (:func:`rendered_strip`)."""
DISCRETE_WORDS = {0: "STOP", 1: "FORWARD 0.25 m", 2: "LEFT 15°", 3: "RIGHT 15°"}
_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222;max-width:80em}
h1{font-size:1.25em}h2{font-size:1.05em;margin:1.4em 0 .4em}.meta{color:#555;font-size:.9em}
.step{border-top:1px solid #ccc;padding:.6em 0}.flag{color:#c92a2a;font-weight:600}
.pano{position:relative;display:inline-block;line-height:0}
.cand{position:absolute;top:0;height:100%;border-left:2px solid #e8590c}
.cand span{position:absolute;top:2px;left:2px;background:#e8590c;color:#fff;font:11px sans-serif;
padding:0 3px;line-height:14px}.cand.chosen{border-left:3px solid #2b8a3e}.cand.chosen span{background:#2b8a3e}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;font-size:.8em;max-height:22em;overflow:auto}
.cols{display:flex;gap:1em;align-items:flex-start}.act{font-weight:600}.hit{color:#c92a2a}.cols>div{flex:1;min-width:0}
table{border-collapse:collapse;font-size:.85em}td,th{padding:.15em .5em;border-bottom:1px solid #eee;text-align:left}
details{font-size:.85em;margin:.15em 0}summary{cursor:pointer}
.legend{font-size:.8em;color:#444;margin:.3em 0}.legend svg{vertical-align:middle;margin:0 .2em 0 .8em}
#stepper{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ccc;z-index:1}
#stepper input[type=range]{width:30em;vertical-align:middle}
"""
_LEGEND = ('<p class="legend">'
           '<svg width="14" height="14"><circle cx="7" cy="7" r="4" fill="none" stroke="#1c7ed6" stroke-width="2"/></svg>'
           "start"
           '<svg width="22" height="14"><line x1="0" y1="7" x2="22" y2="7" stroke="#1c7ed6" stroke-width="2"/></svg>'
           "agent path"
           '<svg width="22" height="14"><line x1="0" y1="7" x2="22" y2="7" stroke="#888" stroke-width="2" '
           'stroke-dasharray="4 3"/></svg>reference path'
           '<svg width="14" height="14"><circle cx="7" cy="7" r="2.5" fill="#2b8a3e"/></svg>goal'
           '<svg width="14" height="14"><circle cx="7" cy="7" r="6" fill="none" stroke="#2b8a3e" stroke-width="1.5"/>'
           "</svg>success radius"
           '<svg width="14" height="14"><rect x="2" y="2" width="10" height="10" fill="none" stroke="#000" '
           'stroke-width="2"/></svg>STOP'
           '<svg width="14" height="14"><circle cx="7" cy="7" r="4" fill="#c92a2a"/></svg>agent'
           '<svg width="14" height="14"><path d="M3,3L11,11M3,11L11,3" stroke="#c92a2a" stroke-width="2"/></svg>'
           "collision</p>")
"""What the bird's-eye views draw, under the episode's map."""
_STEPPER = """<div id="stepper" hidden><button id="prev">&#9664;</button>
<input type="range" id="slider" min="0" value="0" aria-label="step"> <button id="next">&#9654;</button>
<span id="where"></span> <label><input type="checkbox" id="all"> every step</label></div>"""
_STEPPER_SCRIPT = """<script>(() => {
const steps = [...document.querySelectorAll('.step')];
if (!steps.length) return;
const bar = document.getElementById('stepper'), slider = document.getElementById('slider');
const where = document.getElementById('where'), all = document.getElementById('all');
bar.hidden = false; slider.max = steps.length - 1;
const show = i => {
  i = Math.max(0, Math.min(steps.length - 1, i)); slider.value = i;
  steps.forEach((s, k) => { s.hidden = !all.checked && k !== i; });
  where.textContent = `step ${i + 1} of ${steps.length} (keys: left and right arrows)`;
};
slider.oninput = () => show(+slider.value);
document.getElementById('prev').onclick = () => show(+slider.value - 1);
document.getElementById('next').onclick = () => show(+slider.value + 1);
all.onchange = () => show(+slider.value);
document.addEventListener('keydown', e => {
  if (e.key === 'ArrowRight') show(+slider.value + 1);
  if (e.key === 'ArrowLeft') show(+slider.value - 1);
});
const anchor = steps.findIndex(s => '#' + s.id === location.hash);
show(anchor < 0 ? 0 : anchor);
})();</script>"""
"""One step at a time: a slider, buttons and the arrow keys (without JavaScript every step shows)."""


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
    """The observation's RGB views as one strip at the sensor's size (:func:`scale_to_strip`); None
    without RGB. A panoramic rig's views (``rgb_pano_NN``, evenly spaced, ``hfov_deg``
    wide: the rig's default) are cropped to the angle between neighbours and ordered so
    that heading ``h`` sits at :func:`strip_x` of the width; a single ``rgb`` view is
    returned as it is."""
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
    return scale_to_strip(strip)


def rendered_strip(views: Sequence[np.ndarray]) -> np.ndarray:
    """The strip of evenly spaced views rendered for people (view ``i`` turned ``i * 360 / n``
    degrees to the left, each ``360 / n`` wide), laid out as :func:`panorama_strip` does."""
    strip = panorama_strip({f"rgb_pano_{i:02d}": v for i, v in enumerate(views)}, hfov_deg=360.0 / len(views))
    assert strip is not None
    return strip


def frame_x(heading_deg: float, span_deg: float) -> float | None:
    """Horizontal position (0-1) of a heading in a frame ``span_deg`` wide centred ahead
    (a 360° strip: :func:`strip_x`); None when the heading is out of the frame."""
    if span_deg >= 360.0:
        return strip_x(heading_deg)
    h = 180.0 - (180.0 - float(heading_deg)) % 360.0
    return 0.5 - h / span_deg if abs(h) <= span_deg / 2 else None


def scale_to_strip(image: np.ndarray) -> np.ndarray:
    """An RGB image at its own size, the pixels the agent saw; scaled down to
    :data:`MAX_STRIP_HEIGHT` rows only when taller."""
    from PIL import Image

    height, width = image.shape[:2]
    if height <= MAX_STRIP_HEIGHT:
        return np.ascontiguousarray(image[..., :3], dtype=np.uint8)
    scaled = Image.fromarray(np.ascontiguousarray(image[..., :3], dtype=np.uint8)).resize(
        (max(1, round(width * MAX_STRIP_HEIGHT / height)), MAX_STRIP_HEIGHT), Image.BILINEAR)
    return np.asarray(scaled)


def jpeg(strip: np.ndarray) -> bytes:
    """A strip as JPEG bytes."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(strip).save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


class FrameRecorder:
    """Writes one episode's frames (``step_NNN.jpg``) and ``frames.json`` into ``folder``.

    Called with (step, observation) before the agent acts: the agent's own RGB views when it
    has them, else ``render()``, which returns a view rendered from the agent's pose for people
    and its width in degrees. Frames stop once the next one would pass ``budget`` bytes or
    ``max_rendered`` rendered frames. ``frames.json`` says where the frames came from, how wide
    they are (``span_deg``: 360 for a panorama strip) and where they stopped.
    """

    def __init__(self, folder: Path, render: Any = None, budget: int = FRAME_BUDGET_BYTES,
                 camera_hfov_deg: float = 90.0, max_rendered: int = RENDERED_FRAMES) -> None:
        self.folder, self.render, self.budget, self.hfov = Path(folder), render, budget, camera_hfov_deg
        self.max_rendered, self.rendered = max_rendered, 0
        self.used, self.source, self.span, self.stopped_at = 0, None, None, None

    def __call__(self, step: int, observation: Mapping[str, Any]) -> None:
        if self.stopped_at is not None:
            return
        strip, source = panorama_strip(observation), "agent"
        span = 360.0 if any(k.startswith("rgb_pano_") for k in observation) else self.hfov
        if strip is None:
            if self.render is None:
                return
            if self.rendered >= self.max_rendered:
                self._write_info(stopped_at=step)
                return
            (image, span), source = self.render(), "render"
            strip = scale_to_strip(image)
            self.rendered += 1
        data = jpeg(strip)
        if self.used + len(data) > self.budget:
            self._write_info(stopped_at=step)
            return
        write_bytes_atomic(self.folder / f"step_{step:03d}.jpg", data)
        self.used += len(data)
        if (source, span) != (self.source, self.span):
            self.source, self.span = source, span
            self._write_info()

    def _write_info(self, stopped_at: int | None = None) -> None:
        self.stopped_at = stopped_at
        write_text_atomic(self.folder / FRAMES_FILE, json.dumps(
            {"source": self.source, "span_deg": self.span, "budget_bytes": self.budget,
             "max_rendered": self.max_rendered, "stopped_at": stopped_at}))


BevFrame = tuple[Callable[[Sequence[float]], str], float, float, float]


def _bev_frame(record: Mapping[str, Any], scene_map: Mapping[str, Any] | None, size: int) -> BevFrame | None:
    """The drawing frame of a ``size`` px bird's-eye view: (point formatter, width, height,
    metres-to-pixels scale); the scene map's extent, else the paths' bounds (None: nothing to draw).
    The formatter remembers what it wrote: a page's step views share one frame."""
    points = [p[:2] for key in ("trajectory", "reference_path") for p in record.get(key) or []]
    points += [g["position"][:2] for g in record.get("goals") or []]
    if not points:
        return None
    if scene_map is not None:
        x0, x1, y0, y1 = (float(v) for v in scene_map["extent"])
    else:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        x0, x1, y0, y1 = min(xs) - 1.0, max(xs) + 1.0, min(ys) - 1.0, max(ys) + 1.0
    scale = size / max(x1 - x0, y1 - y0, 1.0)
    written: dict[tuple[float, float], str] = {}  # each step's view draws the poses before it again

    def pt(p: Sequence[float]) -> str:
        key = (p[0], p[1])
        text = written.get(key)
        if text is None:
            text = written[key] = f"{(p[0] - x0) * scale:.1f},{(y1 - p[1]) * scale:.1f}"
        return text

    return pt, (x1 - x0) * scale, (y1 - y0) * scale, scale


def _map_layer(scene_map: Mapping[str, Any], pt: Callable[[Sequence[float]], str], width: float,
               height: float) -> str:
    """The static part of a bird's-eye view: the map picture, the objects and the room names."""
    href = html.escape(f"{MAPS_DIR}/{scene_map.get('picture', '')}", quote=True)
    parts = [f'<image href="{href}" x="0" y="0" width="{width:.1f}" height="{height:.1f}" '
             'preserveAspectRatio="none" style="image-rendering:pixelated"/>']
    for obj in scene_map.get("objects") or []:
        corners = " ".join(pt(c) for c in obj.get("corners") or [])
        label = html.escape(f"{obj.get('category')} ({obj.get('id')})")
        parts.append(f'<polygon points="{corners}" fill="#7a3b00" fill-opacity="0.25" stroke="#7a3b00" '
                     f'stroke-width="0.8"><title>{label}</title></polygon>')
    for room in scene_map.get("rooms") or []:
        x, y = pt((room["x"], room["y"])).split(",")
        parts.append(f'<text x="{x}" y="{y}" font-size="9" text-anchor="middle" fill="#333" '
                     f'font-family="sans-serif">{html.escape(str(room.get("type", "")))}</text>')
    return "".join(parts)


def _map_defs(scene_map: Mapping[str, Any] | None, frame: BevFrame | None, layer_id: str) -> str:
    """A hidden SVG that defines the map layer of the page's views in ``frame`` once, as
    ``layer_id`` (each step's view references it: a page no longer repeats the map per step)."""
    if scene_map is None or frame is None:
        return ""
    pt, width, height, _ = frame
    return (f'<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs><g id="{layer_id}">'
            f"{_map_layer(scene_map, pt, width, height)}</g></defs></svg>")


def _bev_svg(record: Mapping[str, Any], upto: int | None, scene_map: Mapping[str, Any] | None = None,
             size: int = 260, map_layer: str | None = None, frame: BevFrame | None = None) -> str:
    """The bird's-eye view: the scene's map (walls, rooms, objects) when there is one, the
    reference path (grey, dashed), goals (green rings), the trajectory up to pose ``upto``
    (blue; all when None), collisions (red crosses) and the agent there (red, with its heading).
    ``map_layer``: the id of the page's map layer (:func:`_map_defs`), referenced, not redrawn;
    ``frame``: the page's :func:`_bev_frame` of this ``size`` (made here when None)."""
    frame = frame or _bev_frame(record, scene_map, size)
    if frame is None:
        return ""
    pt, width, height, scale = frame
    traj = [p[:2] for p in record.get("trajectory") or []]
    ref = [p[:2] for p in record.get("reference_path") or []]
    goals = [(g["position"][:2], g.get("radius", 0.0)) for g in record.get("goals") or []]
    shown = traj if upto is None else traj[: upto + 1]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'style="background:#fafafa;border:1px solid #ccc">']
    if scene_map is not None:
        parts.append(f'<use href="#{map_layer}"/>' if map_layer else _map_layer(scene_map, pt, width, height))
    if ref:
        parts.append(f'<polyline points="{" ".join(pt(p) for p in ref)}" fill="none" stroke="#888" '
                     'stroke-width="2" stroke-dasharray="4 3"/>')
    for goal, radius in goals:
        cx, cy = pt(goal).split(",")
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="{max(radius * scale, 3):.1f}" fill="none" '
                     'stroke="#2b8a3e" stroke-width="1.5"/>')
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="#2b8a3e"/>')
    if traj:
        cx, cy = pt(traj[0]).split(",")
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" fill="none" stroke="#1c7ed6" stroke-width="2"/>')
    if traj and record.get("fail_reason") == "stop" and len(shown) == len(traj):
        cx, cy = (float(v) for v in pt(traj[-1]).split(","))
        parts.append(f'<rect x="{cx - 6:.1f}" y="{cy - 6:.1f}" width="12" height="12" fill="none" stroke="#000" '
                     'stroke-width="2"/>')
    if shown:
        parts.append(f'<polyline points="{" ".join(pt(p) for p in shown)}" fill="none" stroke="#1c7ed6" '
                     'stroke-width="2"/>')
        for k, hit in enumerate(record.get("collisions") or []):
            if hit and k + 1 < len(shown):
                cx, cy = (float(v) for v in pt(shown[k + 1]).split(","))
                parts.append(f'<path d="M{cx - 4:.1f},{cy - 4:.1f}L{cx + 4:.1f},{cy + 4:.1f}M{cx - 4:.1f},'
                             f'{cy + 4:.1f}L{cx + 4:.1f},{cy - 4:.1f}" stroke="#c92a2a" stroke-width="2"/>')
        cx, cy = (float(v) for v in pt(shown[-1]).split(","))
        headings = record.get("headings") or []
        if len(shown) - 1 < len(headings):
            yaw = float(headings[len(shown) - 1])
            parts.append(f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{cx + 10 * math.cos(yaw):.1f}" '
                         f'y2="{cy - 10 * math.sin(yaw):.1f}" stroke="#c92a2a" stroke-width="2"/>')
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="#c92a2a"/>')
    parts.append("</svg>")
    return "".join(parts)


def describe_action(action: Any, space: str | None, option: str | None = None) -> str:
    """An action in words: ``FORWARD 0.25 m``, ``C: 0.98 m at +60°``, ``ASK "where is the sofa?"``.

    Args:
        action: The recorded (JSON) action.
        space: The record's ``action_space`` (``discrete``, ``waypoint``, ``velocity``; None: guess).
        option: The candidate id an LLM agent chose, if any (prefixed).
    """
    prefix = f"{option}: " if option else ""
    if isinstance(action, Mapping):
        if "ask" in action:
            return f'ASK "{action["ask"]}"'
        if "answer" in action and isinstance(action["answer"], int):
            return f"ANSWER {chr(ord('A') + action['answer'])}"
        return json.dumps(action)
    if isinstance(action, bool) or action is None:
        return str(action)
    if isinstance(action, int):
        return DISCRETE_WORDS.get(action, f"action {action}") if space in (None, "discrete") else f"action {action}"
    if isinstance(action, list) and len(action) == 3 and all(isinstance(v, (int, float)) for v in action):
        a, b, stop = (float(v) for v in action)
        if stop >= 0.5:
            return f"{prefix}STOP"
        if space == "velocity":
            return f"{prefix}{a:.2f} m/s turning {math.degrees(b):+.0f}°/s"
        return f"{prefix}{a:.2f} m at {math.degrees(b):+.0f}°"
    return json.dumps(action)


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


def _frame_html(strip: str | None, step: Mapping[str, Any], index: int, frames: Mapping[str, Any] | None) -> str:
    if strip is None:
        if frames is None:
            return ('<p class="meta">(no frames for this episode: frames are captured for the episodes that get '
                    "a trajectory picture, the first --plots N of each task and physics mode)</p>")
        stopped = frames.get("stopped_at")
        if stopped is not None and index >= stopped:
            return (f'<p class="meta">(no frame: this episode\'s frames stopped at step {stopped}, where they reached '
                    f"the frame budget: {frames.get('budget_bytes', 0) / 2**20:.0f} MB, or "
                    f"{frames.get('max_rendered')} frames rendered for people)</p>")
        return '<p class="meta">(no frame for this step)</p>'
    rendered = frames is not None and frames.get("source") == "render"
    span = float((frames or {}).get("span_deg") or 360.0)
    what = "360° around the agent (ahead in the middle)" if span >= 360.0 else f"the {span:g}° ahead of the agent"
    note = (f'<p class="meta">{what}, rendered for this page from its pose: the agent itself has no RGB '
            "camera</p>") if rendered else ""
    chosen = _chosen_id(step)
    marks = []
    for cand in step.get("candidates") or []:
        if not isinstance(cand, Mapping) or "heading_deg" not in cand:
            continue
        x = frame_x(cand["heading_deg"], span)
        if x is None:
            continue
        klass = "cand chosen" if str(cand.get("id")) == chosen else "cand"
        label = html.escape(f"{cand.get('id')} {cand.get('distance_m', '')}m")
        marks.append(f'<div class="{klass}" style="left:{100 * x:.1f}%" '
                     f'title="{html.escape(str(cand.get("phrase", "")), quote=True)}"><span>{label}</span></div>')
    return (f'<div class="pano"><img src="{html.escape(strip, quote=True)}" alt="what the agent faced">'
            f'{"".join(marks)}</div>{note}')


def _outcome_html(record: Mapping[str, Any], index: int) -> str:
    """The action's collision, if any, and what it hit."""
    collisions = record.get("collisions") or []
    if index >= len(collisions) or not collisions[index]:
        return ""
    hit = (record.get("hits") or {}).get(str(index)) or []
    what = ", ".join(hit) if hit else "something (not recorded)"
    return f' · <span class="hit">collision: hit {html.escape(what)}</span>'


def render_episode_page(record: Mapping[str, Any], strips: Mapping[int, str],
                        frames: Mapping[str, Any] | None = None, scene_map: Mapping[str, Any] | None = None) -> str:
    """The HTML of one episode's page; ``strips`` maps step index to a frame's relative URL,
    ``frames`` is the episode's ``frames.json`` (None: no frames captured) and ``scene_map``
    the map description of its scene (None: the inset shows the paths only)."""
    trace = record.get("agent_trace") if isinstance(record.get("agent_trace"), Mapping) else {}
    actions = record.get("actions") or []
    steps = [s for s in trace.get("steps") or [] if isinstance(s, Mapping)]
    if not steps:  # an agent without a step trace: one step per action
        steps = [{"step": i, "action": a} for i, a in enumerate(actions)]
    metrics = record.get("metrics") or {}
    title = f"{record.get('episode_id')} · {PHYSICS_TITLES.get(str(record.get('physics')), record.get('physics'))}"
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(f'{100 * v:.1f} %' if is_percent(k) else _fmt(v))}"
                   "</td></tr>" for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    counts = ", ".join(f"{k} {trace[k]}" for k in ("fallbacks", "repairs", "parse_failures") if k in trace)
    roles = trace.get("roles") if isinstance(trace.get("roles"), Mapping) else {}
    if len(roles) > 1:
        counts += " · tokens by role: " + ", ".join(
            f"{role} {int(c.get('prompt', 0)) + int(c.get('completion', 0))}" for role, c in roles.items()
            if isinstance(c, Mapping))
    usage = record.get("llm") or {}
    space = record.get("action_space")
    last_pose = len(record.get("trajectory") or [1]) - 1
    step_frame = _bev_frame(record, scene_map, STEP_MAP_SIZE)  # one for every step's view
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f'<p><a href="../index.html">← all episodes</a></p><h1>{html.escape(title)}</h1>',
        f'<p class="meta">task {html.escape(str(record.get("task")))} · split {html.escape(str(record.get("split")))}'
        f' · scene {html.escape(str(record.get("scene_id")))} · ended: {html.escape(str(record.get("fail_reason")))}'
        + (f' · <span class="flag">{html.escape(str(record.get("error")))}</span>' if record.get("error") else "")
        + "</p>",
        f"<p><b>Instruction.</b> {html.escape(str(record.get('instruction', '')))}</p>",
        '<div class="cols"><div>', _bev_svg(record, None, scene_map, size=360), _LEGEND, "</div><div><table>", rows,
        "</table>",
        f'<p class="meta">{html.escape(counts)}'
        + (f" · {usage.get('calls', 0)} calls ({usage.get('cached_calls', 0)} cached), "
           f"{usage.get('tokens', 0)} tokens, billed ${usage.get('cost_usd', 0):.4f}" if usage else "")
        + "</p></div></div>",
        _STEPPER, _map_defs(scene_map, step_frame, STEP_MAP_LAYER),
    ]
    llm_steps = any(k in step for step in steps for k in ("messages", "reply", "parsed"))
    for i, step in enumerate(steps):
        index = int(step.get("step", i)) if isinstance(step.get("step", i), int) else i
        flags = [f for f in ("repair", "fallback") if step.get(f)]
        flag_html = f' <span class="flag">{" + ".join(flags)}</span>' if flags else ""
        action = step.get("action", actions[i] if i < len(actions) else None)
        words = describe_action(action, space, _chosen_id(step))
        out += [
            f'<div class="step" id="step{index}"><h2>Step {index}: <span class="act">{html.escape(words)}</span>'
            f"{_outcome_html(record, i)}{flag_html}</h2>",
            _frame_html(strips.get(i), step, i, frames),
            '<div class="cols"><div style="flex:0 0 auto">',
            _bev_svg(record, min(i, last_pose), scene_map, STEP_MAP_SIZE, STEP_MAP_LAYER, step_frame),
            "</div>",
        ]
        if llm_steps:
            out += ["<div><b>Sent to the model</b>", f"<pre>{html.escape(_messages_text(step.get('messages')))}</pre></div>",
                    "<div><b>Reply</b>", f"<pre>{html.escape(str(step.get('reply', '')))}</pre>"]
            if step.get("repair_reply") is not None:
                out.append(f"<b>Reply to the repair prompt</b><pre>{html.escape(str(step['repair_reply']))}</pre>")
            if isinstance(step.get("debate"), Mapping):
                out.append(f"<b>Debate</b><pre>{html.escape(_debate_text(step['debate']))}</pre>")
            out.append(f"<b>Parsed</b><pre>{html.escape(json.dumps(step.get('parsed'), indent=1, default=str))}</pre>")
        else:
            out.append("<div>")
        out += [f"<b>Action</b><pre>{html.escape(json.dumps(action, default=str))}</pre></div></div>",
                _discussion_html(step), "</div>"]
    out += [_STEPPER_SCRIPT, "</body></html>", ""]
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
    maps: dict[str, Any] = {}
    for record in records:
        name = page_name(record)
        strips, frames = {}, None
        captured = folder / name
        if captured.is_dir():
            for path in captured.glob("step_*.jpg"):
                strips[int(path.stem.split("_")[1])] = f"{name}/{path.name}"
            try:
                frames = json.loads((captured / FRAMES_FILE).read_text())
            except (OSError, ValueError):
                frames = {}
        scene = str(record.get("scene_id"))
        if scene not in maps:
            maps[scene] = read_scene_map(folder, scene)
        write_text_atomic(folder / f"{name}.html", render_episode_page(record, strips, frames, maps[scene]))
        links[(str(record["episode_id"]), str(record["physics"]))] = f"{VIEWER_DIR}/{name}.html"
    return links
