"""``index.html``: a static page listing every episode of a run with its instruction,
metrics and trajectory picture.

One self-contained file (inline CSS and JavaScript, no network), opened straight from
disk. Clicking a column header sorts by it (again to reverse); the filter box hides rows
that do not contain its text. ``index.html#sort=SPL:desc`` opens sorted. When its script
has run, the page sets ``data-ready`` and ``data-rows`` on ``<body>``, after loading
``data-broken-images``; a script error is written to ``data-errors`` (headless tests
read these).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vlnverse.eval.reporting.report import PHYSICS_TITLES, sort_records
from vlnverse.fileio import write_text_atomic

METRIC_COLUMNS = ("SR", "OSR", "SPL", "NE", "TL", "nDTW", "CR", "steps")
PERCENT = frozenset({"SR", "OSR", "SPL", "nDTW", "CR"})

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.2em;color:#222}
h1{font-size:1.3em;margin:.2em 0}.meta{color:#555;font-size:.9em;margin-bottom:.8em}
input{padding:.35em .5em;width:22em;margin:.3em 0 .8em 0}
table{border-collapse:collapse;font-size:.85em;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.3em .45em;vertical-align:top;text-align:left}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0;user-select:none;white-space:nowrap}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.instr{max-width:32em;font-size:.92em}.ok{color:#2b8a3e;font-weight:600}.bad{color:#c92a2a}
img.thumb{width:160px;border:1px solid #ccc}tr:hover{background:#fafafa}.err{color:#c92a2a;font-size:.85em}
"""

_SCRIPT = """
(function(){
  var body=document.body;
  window.addEventListener('error',function(e){
    body.setAttribute('data-errors',(body.getAttribute('data-errors')||'')+e.message+';');});
  var table=document.getElementById('episodes'),tbody=table.tBodies[0];
  var heads=table.tHead.rows[0].cells;
  function key(row,col,numeric){
    var v=row.cells[col].getAttribute('data-v');
    if(numeric){var f=parseFloat(v);return isNaN(f)?-Infinity:f;}return v||'';}
  function sortBy(col,dir){
    var numeric=heads[col].getAttribute('data-type')==='num';
    var rows=Array.prototype.slice.call(tbody.rows);
    rows.sort(function(a,b){var x=key(a,col,numeric),y=key(b,col,numeric);
      var c=x<y?-1:x>y?1:0;if(c===0){c=(+a.getAttribute('data-i'))-(+b.getAttribute('data-i'));return c;}
      return dir==='desc'?-c:c;});
    rows.forEach(function(r){tbody.appendChild(r);});
    for(var i=0;i<heads.length;i++){heads[i].className='';}
    heads[col].className=dir;body.setAttribute('data-sorted',heads[col].getAttribute('data-key')+':'+dir);}
  for(var i=0;i<heads.length;i++){(function(col){heads[col].addEventListener('click',function(){
    sortBy(col,heads[col].className==='asc'?'desc':'asc');});})(i);}
  document.getElementById('filter').addEventListener('input',function(){
    var q=this.value.toLowerCase();var shown=0;
    Array.prototype.forEach.call(tbody.rows,function(r){
      var hit=r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=hit?'':'none';if(hit)shown++;});
    document.getElementById('shown').textContent=shown;});
  var m=/sort=([A-Za-z_0-9]+):(asc|desc)/.exec(window.location.hash);
  if(m){for(var j=0;j<heads.length;j++){if(heads[j].getAttribute('data-key')===m[1]){sortBy(j,m[2]);}}}
  window.addEventListener('load',function(){var broken=0;
    Array.prototype.forEach.call(document.images,function(im){if(!im.complete||im.naturalWidth===0)broken++;});
    body.setAttribute('data-broken-images',String(broken));});
  body.setAttribute('data-rows',String(tbody.rows.length));
  body.setAttribute('data-ready','1');
})();
"""


def _num_cell(value: Any, name: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return '<td class="num" data-v="">-</td>'
    v = float(value)
    if name == "steps":
        text = str(int(v))
    elif name == "SR":
        text = '<span class="ok">✓</span>' if v >= 1 else '<span class="bad">✗</span>'
    elif name in PERCENT:
        text = f"{100 * v:.1f}"
    else:
        text = f"{v:.2f}"
    return f'<td class="num" data-v="{v!r}">{text}</td>'


def _text_cell(text: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<td{klass} data-v="{html.escape(text, quote=True)}">{html.escape(text)}</td>'


def _end(record: Mapping[str, Any]) -> str:
    """How an episode ended: the EQA outcome (with its reason) where there is one, else ``fail_reason``."""
    outcome = record.get("outcome")
    if outcome:
        reason = record.get("outcome_reason")
        return f"{outcome} ({reason})" if reason else str(outcome)
    return str(record.get("fail_reason") or "")


def render_index(records: Iterable[Mapping[str, Any]], *, title: str, meta: str = "",
                 pages: Mapping[tuple[str, str], str] | None = None) -> str:
    """The HTML text of the index page for ``records`` (``plot`` paths are relative to it);
    ``pages`` maps (episode id, physics) to the episode's viewer page."""
    pages = pages or {}
    rows = sort_records(records)
    head = [("i", "#", "num"), ("episode", "Episode", "text"), ("task", "Task", "text"),
            ("split", "Split", "text"), ("physics", "Physics", "text"), ("instruction", "Instruction", "text")]
    head += [(m, m + (" %" if m in PERCENT and m != "SR" else ""), "num") for m in METRIC_COLUMNS]
    head += [("end", "End", "text"), ("plot", "Trajectory", "text")]
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>", f"<style>{_STYLE}</style></head>",
        '<body data-ready="0">', f"<h1>{html.escape(title)}</h1>",
        f'<div class="meta">{html.escape(meta)} · <span id="shown">{len(rows)}</span> of {len(rows)} shown '
        "· click a header to sort</div>",
        '<input id="filter" type="search" placeholder="filter (id, task, instruction, …)">',
        '<table id="episodes"><thead><tr>',
        "".join(f'<th data-key="{k}" data-type="{t}">{html.escape(label)}</th>' for k, label, t in head),
        "</tr></thead><tbody>",
    ]
    for i, record in enumerate(rows):
        metrics = record.get("metrics") or {}
        end = _end(record)
        episode_id = str(record.get("episode_id", ""))
        page = pages.get((episode_id, str(record.get("physics"))))
        id_cell = _text_cell(episode_id) if page is None else (
            f'<td data-v="{html.escape(episode_id, quote=True)}"><a href="{html.escape(page, quote=True)}">'
            f"{html.escape(episode_id)}</a></td>")
        cells = [f'<td class="num" data-v="{i}">{i + 1}</td>',
                 id_cell, _text_cell(str(record.get("task", ""))),
                 _text_cell(str(record.get("split", ""))),
                 _text_cell(PHYSICS_TITLES.get(str(record.get("physics")), str(record.get("physics")))),
                 _text_cell(str(record.get("instruction", "")), "instr")]
        cells += [_num_cell(metrics.get(m), m) for m in METRIC_COLUMNS]
        error = record.get("error")
        end_html = html.escape(end) + (f'<div class="err">{html.escape(str(error))}</div>' if error else "")
        cells.append(f'<td data-v="{html.escape(end, quote=True)}">{end_html}</td>')
        plot = record.get("plot")
        if plot:
            src = html.escape(str(plot), quote=True)
            cells.append(f'<td data-v="{src}"><a href="{src}"><img class="thumb" src="{src}" '
                         f'alt="trajectory of {html.escape(str(record.get("episode_id")), quote=True)}"></a></td>')
        else:
            cells.append('<td data-v="">-</td>')
        out.append(f'<tr data-i="{i}">' + "".join(cells) + "</tr>")
    out += ["</tbody></table>", f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(out)


def write_index(path: str | Path, records: Iterable[Mapping[str, Any]], *, title: str, meta: str = "",
                pages: Mapping[tuple[str, str], str] | None = None) -> Path:
    """Write the index page atomically and return its path."""
    path = Path(path)
    write_text_atomic(path, render_index(records, title=title, meta=meta, pages=pages))
    return path

