"""The HTML trace report (``hwcheck replay TRACE --html OUT.html``): one self-contained page.

The page carries the whole trace as JSON and draws it with inline CSS and JavaScript (no
network at view time): a lane per replica with its log as cells (offset, record, epoch), the
LEO and HW markers, the epoch cache and, on a leader, its ISR and remote LEOs; the messages in
flight as arrows between lanes; the controller and the producer's acknowledgements; a
space-time diagram of the whole trace (a lane per replica, each message an arrow from the step
that sent it to the step that handled it); the step's action as a caption; buttons, a slider
and keys (left/right, Home/End) to move; and the broken invariant highlighted from the step
where it breaks, with the story of how it came about (spec/story.py), a line per step to click. No
two labels overlap at any width: a row per marker label, a column per message, and the drawings
scroll sideways in their own box rather than widen the page.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.result import Trace
>>> m = Model(Config(mode="hw", records=1))
>>> s0 = m.init_states()[0]
>>> page = render_html(m, Trace([s0, m.step(s0, ("produce", 0))], [("produce", 0)]), "demo")
>>> page.startswith("<!DOCTYPE html>") and "produce(r0)" in page
True
>>> " src=" in page or " href=" in page        # nothing to fetch
False
"""

from __future__ import annotations

import html
import json
from typing import List, Optional, Sequence, Tuple


from .render import settings_line

DELIVERED_BY = ("leader_handle_fetch", "follower_handle_fetch", "reject_request", "leader_handle_epoch_request",
                "follower_handle_epoch_response")
REQUESTS = ("Fetch", "OffsetsForLeaderEpoch")


def first_breaks(model, states: Sequence) -> List[Tuple[int, str]]:
    """(step, invariant) for each invariant at the first step where it breaks, in step order."""
    seen, out = set(), []
    for i, s in enumerate(states):
        for name in model.violated(s):
            if name not in seen:
                seen.add(name)
                out.append((i, name))
    return out


def invariant_texts(model) -> dict:
    """Each invariant's one-paragraph docstring, for the page's explanation."""
    out = {}
    for name, pred in model.invariants:
        doc = (pred.__doc__ or "").strip()
        out[name] = " ".join(doc.split())
    return out


def messages(model, trace) -> List[dict]:
    """Every message of the trace with the step that sent it and the step that ended it.

    A follower has at most one message in flight (``inflight[f]``): a message starts at the
    step where it appears and ends at the step where it changes or disappears; it was
    delivered when that step is a handler, dropped otherwise (a crash, a restart, a new role).
    """
    out, current = [], {}
    for i, s in enumerate(trace.states):
        inflight = model.to_json(s)["inflight"]
        action = trace.labels[i - 1][0] if i else None
        for f in sorted(set(current) | set(inflight)):
            msg = inflight.get(f)
            old = current.get(f)
            if old is not None and (msg is None or json.dumps(msg, sort_keys=True) != old["key"]):
                old["end"], old["delivered"] = i, action in DELIVERED_BY
                out.append(old)
                del current[f]
            if msg is not None and f not in current:
                follower, leader = f, msg["leader"]
                src, dst = (follower, leader) if msg["type"] in REQUESTS else (leader, follower)
                current[f] = {"type": msg["type"], "from": src, "to": dst, "start": i, "end": None,
                              "delivered": False, "fields": {k: v for k, v in msg.items() if k not in ("type", "leader")},
                              "key": json.dumps(msg, sort_keys=True)}
    out.extend(current.values())
    for m in out:
        del m["key"]
    return sorted(out, key=lambda m: (m["start"], m["from"]))


def report_data(model, trace, source: str, claimed: Optional[str] = None) -> dict:
    states = []
    for i, s in enumerate(trace.states):
        label = trace.labels[i - 1] if i else None
        states.append({
            "action": "init" if label is None else model.format_label(label),
            "actors": [] if label is None else [f"r{r}" for r in label[1:]],
            "state": model.to_json(s),
            "broken": model.violated(s),
        })
        # what breaks each broken invariant, in the spec's words (spec/invariants.py why_broken)
        if hasattr(model, "why_broken"):
            states[-1]["why"] = {name: model.why_broken(s, name) for name in states[-1]["broken"]}
            # the cells at fault, "r0:2" (replica r0, offset 2), for the red outline
            states[-1]["culprits"] = sorted({f"r{r}:{o}" for name in states[-1]["broken"]
                                             for r, o in model.broken_cells(s, name)})
    return {
        "source": source,
        "settings": settings_line(model.cfg),
        "replicas": [f"r{r}" for r in range(model.cfg.replicas)],
        "claimed": claimed,
        "first_breaks": [{"step": i, "invariant": name} for i, name in first_breaks(model, trace.states)],
        "invariants": invariant_texts(model),
        "messages": messages(model, trace),
        "states": states,
        # how the invariants broken at the end came to break (spec/story.py), in the violation banner
        "story": model.story(trace.states, trace.labels, model.violated(trace.states[-1]))
        if hasattr(model, "story") and trace.states else [],
    }


def render_html(model, trace, source: str, claimed: Optional[str] = None) -> str:
    data = json.dumps(report_data(model, trace, source, claimed), separators=(",", ":"))
    data = data.replace("</", "<\\/")      # never close the script element early
    title = html.escape(f"hwcheck trace: {source}")
    return (PAGE.replace("%TITLE%", title).replace("%CSS%", CSS).replace("%JS%", JS)
            .replace("%DATA%", data))


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>%TITLE%</title>
<style>%CSS%</style>
</head>
<body>
<header>
  <h1 id="title"></h1>
  <div id="settings"></div>
</header>
<nav id="controls" aria-label="step controls">
  <button id="first" title="first step (Home)">|&#x25C0;</button>
  <button id="prev" title="previous step (&#x2190;)">&#x25C0;</button>
  <input id="slider" type="range" min="0" value="0" aria-label="step">
  <button id="next" title="next step (&#x2192;)">&#x25B6;</button>
  <button id="last" title="last step (End)">&#x25B6;|</button>
  <span id="counter"></span>
  <span class="hint">keys: &#x2190; &#x2192; Home End</span>
</nav>
<div id="caption" aria-live="polite"></div>
<div id="violation" class="hidden" role="alert"></div>
<main>
  <section><h2>Replicas at this step</h2><div class="scroll"><svg id="lanes" role="img" aria-label="replica logs"></svg></div></section>
  <section id="side">
    <h2>Controller</h2><div id="controller"></div>
    <h2>Producer</h2><div id="history"></div>
    <h2>Legend</h2>
    <div class="legend">cell: offset above, record <b>#n</b> and epoch <b>e</b> inside (colour by epoch; a record is #0, a replica r0);
    <span class="hwk">HW</span> high watermark, <span class="leok">LEO</span> log end offset,
    <span class="flk">FL</span> flushed prefix; <span class="ack">&#x2713;</span> acknowledged record;
    yellow outline: changed by this step; red outline: a cell that breaks the invariant (a dashed
    red ghost: an acknowledged record the leader lacks); arrows: messages in flight.</div>
  </section>
</main>
<section><h2>Space-time diagram (click a step)</h2><div class="scroll"><svg id="timeline" role="img" aria-label="space-time diagram"></svg></div></section>
<section><h2>Steps (click one; a link to a step is #step=N)</h2><ol id="steps" start="0"></ol></section>
<script id="trace-data" type="application/json">%DATA%</script>
<script>%JS%</script>
</body>
</html>
"""

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 1.2em 2em;color:#222;background:#fafafa}
header h1{font-size:1.2em;margin:.6em 0 .1em}#settings{color:#555;font-family:monospace;font-size:12px}
nav{display:flex;flex-wrap:wrap;gap:.4em;align-items:center;margin:.6em 0;position:sticky;top:0;background:#fafafa;padding:.3em 0;z-index:2}
nav button{font-size:16px;padding:.15em .6em;cursor:pointer;white-space:nowrap}#slider{flex:1 1 120px;min-width:80px;max-width:320px}
#counter{font-family:monospace;font-weight:bold;white-space:nowrap}.hint{color:#888;font-size:12px;white-space:nowrap}
#caption{font-family:monospace;font-size:16px;padding:.4em .6em;background:#eef3ff;border-left:4px solid #3b6fd8}
#violation{margin:.5em 0;padding:.5em .7em;background:#ffe9e9;border:2px solid #c62828;color:#8e0000;font-weight:600}
#violation.now{background:#ffcdd2;box-shadow:0 0 0 3px #ff8a80}#violation .doc{font-weight:normal;color:#5d1010}
.hidden{display:none}
main{display:flex;gap:1.5em;flex-wrap:wrap}main>section{min-width:0}main>section:first-child{flex:1 1 640px}#side{flex:0 1 300px}
header,#caption,#violation,#side,#steps li{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}.scroll>svg{display:block}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.05em;color:#666;margin:.9em 0 .3em}
svg{background:#fff;border:1px solid #ddd;border-radius:4px}
#controller,#history{font-family:monospace;font-size:13px}.legend{font-size:12px;color:#555}
.hwk{color:#c62828;font-weight:bold}.leok{color:#1565c0;font-weight:bold}.flk{color:#6a1b9a;font-weight:bold}
.ack{color:#2e7d32;font-weight:bold}
svg text{font-family:ui-monospace,Menlo,Consolas,monospace}
.broken-lane{fill:#fff0f0}
#steps{font-family:monospace;font-size:13px;columns:3 22em;margin:.3em 0}#steps li{cursor:pointer;padding:0 .3em;break-inside:avoid}
#steps li.current{background:#e3ecff;font-weight:bold}#steps li.breaks{color:#c62828}#violation .why{font-weight:600}
#violation .story{font-weight:normal;margin:.3em 0 0;padding-left:1.2em;list-style:none}#violation .story li{cursor:pointer}
"""

JS = r"""
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("trace-data").textContent);
  const N = D.states.length - 1;
  const SVG = "http://www.w3.org/2000/svg";
  let step = 0;
  const $ = (id) => document.getElementById(id);
  function el(parent, name, attrs, text) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  const epochColour = (e) => `hsl(${(e * 67 + 200) % 360},65%,${e < 0 ? 90 : 82}%)`;
  $("title").textContent = "hwcheck trace: " + D.source;
  $("settings").textContent = D.settings;
  $("slider").max = N;

  // ---------------------------------------------------------------- the lanes at one step
  // No two labels may overlap at any width (the page scrolls the drawing sideways in its own box
  // when the window is narrow; it never shrinks the text). A lane's rows, top down: the offsets,
  // the cells, the ghost of an acknowledged record where the leader holds another (only if the
  // trace has one), then one row per marker label (HW, LEO and, with power failures, FL), ROW
  // apart. Its columns: the replica and its role; the log; the epoch cache, ISR and remote LEOs;
  // then a column per message in flight, each as wide as its longest line.
  const CELL = 46, LEFT = 120, TOP = 26, ROW = 14;
  function maxLog() {
    let m = 1;
    for (const st of D.states) for (const r of D.replicas) m = Math.max(m, st.state.replicas[r].log.length);
    return m;
  }
  const LOGW = (maxLog() + 1) * CELL;
  const ghostUnder = (st) => {      // the controller's leader holds another record where an acknowledged one sits
    const leader = st.state.controller.leader, log = leader ? st.state.replicas[leader].log : [];
    return Object.entries(st.state.history.acked).some(([rec, off]) => log[off] && String(log[off].record) !== rec);
  };
  const GHOST_ROW = D.states.some(ghostUnder);
  const MARK_Y = GHOST_ROW ? 72 : 50;        // the HW label's baseline; LEO one ROW under, FL two
  const FLUSHED = D.states.some((st) => D.replicas.some((r) => st.state.replicas[r].flushed !== undefined));
  const LANE = MARK_Y + (FLUSHED ? 2 : 1) * ROW + 34;
  // a label cut to a width with an ellipsis, the whole of it in its tooltip (measured once the
  // step is drawn: one layout for all of them, not one each)
  let fits = [];
  const fit = (t, width) => { fits.push([t, width]); return t; };
  function cut(t, width) {
    const full = t.textContent;
    for (let n = full.length; n > 1 && t.getComputedTextLength() > width; n--) t.textContent = full.slice(0, n - 1) + "\u2026";
    if (t.textContent !== full) el(t, "title", {}, full);
  }
  const right = (t) => { const b = t.getBBox(); return b.x + b.width; };
  const show = (v) => Array.isArray(v) ? v.map((e) => `#${e.record}@e${e.epoch}`).join(",") || "[]"
    : v !== null && typeof v === "object" ? "{" + Object.entries(v).map(([k, x]) => `${k}=${x}`).join(" ") + "}" : String(v);
  function drawLanes() {
    const svg = $("lanes");
    svg.innerHTML = "";
    const defs = el(svg, "defs", {});
    const mk = el(defs, "marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                                   markerHeight: 7, orient: "auto-start-reverse"});
    el(mk, "path", {d: "M0,0 L10,5 L0,10 z", fill: "#ef6c00"});
    const cur = D.states[step], prev = D.states[Math.max(0, step - 1)];
    const acked = cur.state.history.acked;
    const broken = cur.broken.length > 0;
    const culprits = brokenCells(cur);
    const backgrounds = [], infos = [];
    fits = [];
    D.replicas.forEach((r, i) => {
      const rep = cur.state.replicas[r], old = prev.state.replicas[r];
      const y = TOP + i * LANE;
      const g = el(svg, "g", {"data-replica": r, class: "lane"});
      backgrounds.push(el(g, "rect", {x: 2, y: y - 20, width: 0, height: LANE - 6, rx: 4,
                     fill: cur.actors.includes(r) && step > 0 ? "#f3f7ff" : (broken ? "#fffafa" : "#fff"),
                     stroke: "#e3e3e3"}));
      const role = !rep.alive ? "down" : rep.role === "leader" ? `leader e${rep.leader_epoch}`
               : rep.role === "follower" ? `follower e${rep.leader_epoch}` : "no role";
      el(g, "text", {x: 10, y: y + 4, "font-size": 18, "font-weight": "bold",
                     fill: rep.alive ? "#222" : "#999"}, r);
      fit(el(g, "text", {x: 10, y: y + 24, "font-size": 12, fill: rep.role === "leader" && rep.alive ? "#1b5e20" : "#555"}, role), LEFT - 16);
      if (rep.truncating) el(g, "text", {x: 10, y: y + 24 + ROW, "font-size": 12, fill: "#555"}, "(truncating)");
      // log cells
      rep.log.forEach((entry, o) => {
        const x = LEFT + o * CELL;
        const was = old.log[o];
        const changed = step > 0 && (!was || was.record !== entry.record || was.epoch !== entry.epoch);
        const culprit = culprits.has(`${r}:${o}`);
        el(g, "text", {x: x + CELL / 2, y: y - 6, "font-size": 10, "text-anchor": "middle", fill: "#777"}, o);
        el(g, "rect", {x: x + 1, y: y - 2, width: CELL - 2, height: 36, rx: 3, fill: epochColour(entry.epoch),
                       stroke: culprit ? "#c62828" : changed ? "#f9a825" : "#90a4ae",
                       "stroke-width": culprit || changed ? 3 : 1,
                       class: "cell" + (changed ? " changed" : "") + (culprit ? " culprit" : ""),
                       "data-offset": o, "data-record": entry.record, "data-epoch": entry.epoch});
        const tick = acked[String(entry.record)] === o;
        fit(el(g, "text", {x: x + CELL / 2, y: y + 13, "font-size": 13, "text-anchor": "middle"}, "#" + entry.record),
            CELL - (tick ? 20 : 6));
        fit(el(g, "text", {x: x + CELL / 2, y: y + 28, "font-size": 11, "text-anchor": "middle", fill: "#333"}, "e" + entry.epoch), CELL - 6);
        if (tick)
          el(g, "text", {x: x + CELL - 9, y: y + 9, "font-size": 11, fill: "#2e7d32", "font-weight": "bold"}, "\u2713");
      });
      if (!rep.log.length && !(cur.state.controller.leader === r && Object.keys(acked).length))
        el(g, "text", {x: LEFT + 4, y: y + 20, "font-size": 12, fill: "#999"}, "(empty log)");
      // the controller's leader must hold every acknowledged record at its offset: a ghost cell where it does not
      if (cur.state.controller.leader === r) {
        for (const [rec, off] of Object.entries(acked)) {
          const have = rep.log[off];
          if (have && String(have.record) === rec) continue;
          const x = LEFT + off * CELL, gy = have ? y + 38 : y - 2;    // in the row, or in the ghost row under the wrong record
          el(g, "rect", {x: x + 3, y: gy, width: CELL - 6, height: have ? 18 : 36, rx: 3, fill: "#ffebee",
                         stroke: "#c62828", "stroke-width": 2, "stroke-dasharray": "4 2", class: "missing",
                         "data-record": rec, "data-offset": off});
          fit(el(g, "text", {x: x + CELL / 2, y: gy + 13, "font-size": 11, "text-anchor": "middle", fill: "#c62828"},
             `#${rec}?`), CELL - 8);
          if (!have) el(g, "text", {x: x + CELL / 2, y: gy + 28, "font-size": 9, "text-anchor": "middle",
                                    fill: "#c62828"}, "acked");
        }
      }
      // markers: a line at the offset, its label in its own row under the cells
      const mark = (off, colour, label, row, cls) => {
        const x = LEFT + off * CELL, ly = y + MARK_Y + row * ROW;
        el(g, "line", {x1: x, y1: y - 4, x2: x, y2: ly - 10, stroke: colour, "stroke-width": 2.5, class: cls,
                       "stroke-dasharray": cls === "leo" ? "" : "5 3"});
        el(g, "text", {x: x + 3, y: ly, "font-size": 11, fill: colour, "font-weight": "bold", class: cls}, `${label}=${off}`);
      };
      mark(rep.hw, "#c62828", rep.hw > rep.leo ? "HW>LEO! HW" : "HW", 0, rep.hw > rep.leo ? "hw culprit" : "hw");
      mark(rep.leo, "#1565c0", "LEO", 1, "leo");
      if (rep.flushed !== undefined) mark(rep.flushed, "#6a1b9a", "FL", 2, "flushed");
      // epoch cache, ISR, remote LEOs
      const info = [];
      if (rep.epoch_cache) info.push("cache " + (rep.epoch_cache.map((c) => `e${c.epoch}@${c.start_offset}`).join(" ") || "\u00b7"));
      if (rep.isr) info.push("ISR {" + rep.isr["#set"].join(",") + "}");
      if (rep.remote_leo) info.push("remote LEO " + Object.entries(rep.remote_leo).map(([f, v]) => `${f}:${v < 0 ? "?" : v}`).join(" "));
      if (rep.remote_caught_up && rep.remote_caught_up["#set"].length) info.push("caught up {" + rep.remote_caught_up["#set"].join(",") + "}");
      info.forEach((t, k) => infos.push(el(g, "text", {x: LEFT + LOGW + 10, y: y + 4 + 15 * k, "font-size": 12,
                                                        fill: "#444", class: "info"}, t)));
    });
    const infoRight = Math.max(0, ...infos.map(right));
    for (const [t, width] of fits) cut(t, width);
    // messages in flight: arrows in the gutter between the lanes, a column each with its fields one a line
    const GUTTER = Math.max(LEFT + LOGW + 250, infoRight + 40);
    const laneY = (r) => TOP + D.replicas.indexOf(r) * LANE + 14;
    let W = GUTTER + 200, H = TOP + LANE * D.replicas.length - 20, column = GUTTER;
    Object.entries(cur.state.inflight).forEach(([f, msg]) => {   // (one follower's message at most: one layout)
      const follower = f, leader = msg.leader;
      const request = msg.type === "Fetch" || msg.type === "OffsetsForLeaderEpoch";
      const [src, dst] = request ? [follower, leader] : [leader, follower];
      const x = column + 20, y1 = laneY(src), y2 = laneY(dst), mid = (y1 + y2) / 2;
      const bend = y1 === y2 ? 30 : 0;
      el(svg, "path", {d: `M${x - 30},${y1} C${x + 10},${y1 - bend} ${x + 10},${y2 + bend} ${x - 30},${y2}`,
                       fill: "none", stroke: "#ef6c00", "stroke-width": 2.2, "marker-end": "url(#arrow)",
                       class: "message", "data-type": msg.type});
      const lines = [el(svg, "text", {x: x + 12, y: mid - 4, "font-size": 11, fill: "#bf360c"}, `${msg.type} ${src}\u2192${dst}`)];
      Object.entries(msg).filter(([k]) => k !== "type" && k !== "leader").forEach(([k, v], n) =>
        lines.push(el(svg, "text", {x: x + 12, y: mid + 10 + 13 * n, "font-size": 10, fill: "#6d4c41"}, `${k}=${show(v)}`)));
      column = Math.max(...lines.map(right)) + 16;
      W = Math.max(W, column);
      H = Math.max(H, mid + 10 + 13 * (lines.length - 2) + 8);
    });
    if (!Object.keys(cur.state.inflight).length)
      el(svg, "text", {x: GUTTER, y: TOP, "font-size": 11, fill: "#aaa"}, "no message in flight");
    H += 6;
    for (const b of backgrounds) b.setAttribute("width", W - 4);
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
  }

  // the cells that break an invariant at this step ("r0:2": replica r0, offset 2), as the spec names them
  function brokenCells(cur) {
    return new Set(cur.culprits || []);
  }

  // ---------------------------------------------------------------- controller and producer
  function drawSide() {
    const st = D.states[step].state;
    const c = st.controller;
    let text = `leader ${c.leader || "none"}, epoch ${c.epoch}, ISR {${c.isr["#set"].join(",")}}`;
    if (c.elr) text += `, ELR {${c.elr["#set"].join(",")}}, last known leader {${c.last_known_elr["#set"].join(",")}}`;
    if (c.offline_dirs) text += `, directory offline {${c.offline_dirs["#set"].join(",")}}`;
    if (c.broker_epochs) text += `, broker epochs ${Object.entries(c.broker_epochs).map(([r, e]) => r + ":" + e).join(" ")}`;
    $("controller").textContent = text;
    const h = st.history;
    const acked = Object.entries(h.acked).map(([rec, off]) => `#${rec} at offset ${off}`).join(", ") || "none";
    $("history").innerHTML = "";
    const lines = [`produced ${h.produced}`, `acknowledged ${acked}`,
                   `exposed to consumers: ${h.exposed.map((rec, o) => `#${rec} at offset ${o}`).join(", ") || "none"}`,
                   `crashes ${h.crashes}, power failures ${h.power_failures}` +
                   (h.disk_losses === undefined ? "" : `, disk losses ${h.disk_losses}`)];
    for (const t of lines) { const d = document.createElement("div"); d.textContent = t; $("history").appendChild(d); }
  }

  // ---------------------------------------------------------------- the space-time diagram
  // a column per step, as wide as the box allows between 28 and 64 pixels; the box scrolls beyond
  const TL_LEFT = 60, TL_TOP = 34, TL_LANE = 44;
  let room = 0;                   // the width of the diagram's box, measured on load and resize
  function drawTimeline() {
    const svg = $("timeline"), box = svg.parentElement;
    const COL = Math.max(28, Math.min(64, Math.floor((room - 2 - TL_LEFT - 20) / (N + 1))));
    svg.innerHTML = "";
    const W = TL_LEFT + (N + 1) * COL + 20, H = TL_TOP + TL_LANE * D.replicas.length + 10;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    const defs = el(svg, "defs", {});
    for (const [id, colour] of [["tarrow", "#ef6c00"], ["tdrop", "#9e9e9e"]]) {
      const mk = el(defs, "marker", {id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6,
                                     orient: "auto-start-reverse"});
      el(mk, "path", {d: "M0,0 L10,5 L0,10 z", fill: colour});
    }
    const colX = (i) => TL_LEFT + i * COL + COL / 2;
    const laneY = (r) => TL_TOP + D.replicas.indexOf(r) * TL_LANE + 12;
    const firstBreak = D.first_breaks.length ? D.first_breaks[0].step : -1;
    for (let i = 0; i <= N; i++) {
      const col = el(svg, "rect", {x: TL_LEFT + i * COL, y: 2, width: COL, height: H - 4,
                                   fill: i === step ? "#e3ecff" : (i === firstBreak ? "#ffebee" : "transparent"),
                                   stroke: i === firstBreak ? "#c62828" : "none", class: "col", "data-step": i});
      col.style.cursor = "pointer";
      col.addEventListener("click", () => go(i));
      el(svg, "text", {x: colX(i), y: 16, "font-size": 11, "text-anchor": "middle",
                       fill: i === step ? "#1a3fa0" : "#777", "font-weight": i === step ? "bold" : "normal"}, i);
    }
    D.replicas.forEach((r) => {
      const y = laneY(r);
      el(svg, "text", {x: 8, y: y + 4, "font-size": 13, "font-weight": "bold"}, r);
      for (let i = 0; i < N; i++) {       // the lane between step i and i+1: state after step i
        const rep = D.states[i].state.replicas[r];
        const leader = rep.alive && rep.role === "leader";
        el(svg, "line", {x1: colX(i), y1: y, x2: colX(i + 1), y2: y, stroke: rep.alive ? (leader ? "#2e7d32" : "#78909c") : "#cfd8dc",
                         "stroke-width": leader ? 5 : 2, "stroke-dasharray": rep.alive ? "" : "4 4"});
      }
    });
    for (const m of D.messages) {
      const end = m.end === null ? N + 0.45 : m.end;
      el(svg, "line", {x1: colX(m.start), y1: laneY(m.from), x2: colX(end) - 4, y2: laneY(m.to),
                       stroke: m.delivered ? "#ef6c00" : "#9e9e9e", "stroke-width": 1.6,
                       "stroke-dasharray": m.delivered ? "" : "3 3", "marker-end": m.delivered ? "url(#tarrow)" : "url(#tdrop)",
                       class: "tmessage"}).appendChild(document.createElementNS(SVG, "title")).textContent =
        `${m.type} ${m.from}\u2192${m.to}, sent at step ${m.start}` + (m.end === null ? ", still in flight" :
          (m.delivered ? `, handled at step ${m.end}` : `, dropped at step ${m.end}`));
    }
    for (let i = 1; i <= N; i++) {
      for (const a of D.states[i].actors.slice(0, 1)) {
        el(svg, "circle", {cx: colX(i), cy: laneY(a), r: 5, fill: "#3b6fd8", stroke: "#fff"}).appendChild(
          document.createElementNS(SVG, "title")).textContent = D.states[i].action;
      }
      if (D.states[i].broken.length)
        el(svg, "text", {x: colX(i), y: H - 4, "font-size": 13, "text-anchor": "middle", fill: "#c62828"}, "\u2717");
    }
    // the step shown stays in sight when the diagram is wider than its box
    if (W > room && (colX(step) - COL < box.scrollLeft || colX(step) + COL > box.scrollLeft + room))
      box.scrollLeft = colX(step) - room / 2;
  }
  // redrawn when its box changes width (the window, a scrollbar coming or going)
  new ResizeObserver(() => {
    const w = $("timeline").parentElement.clientWidth;
    if (w !== room) { room = w; drawTimeline(); }
  }).observe($("timeline").parentElement);
  room = $("timeline").parentElement.clientWidth;

  // ---------------------------------------------------------------- caption and violation
  function drawCaption() {
    const st = D.states[step];
    $("counter").textContent = `step ${step} / ${N}`;
    $("caption").textContent = step === 0 ? "step 0: the initial state" : `step ${step}: ${st.action}`;
    const v = $("violation");
    const reached = D.first_breaks.filter((b) => b.step <= step);
    if (!reached.length) { v.className = "hidden"; v.innerHTML = ""; document.body.dataset.broken = ""; return; }
    v.className = reached.some((b) => b.step === step) ? "now" : "";
    v.innerHTML = "";
    for (const b of reached) {
      const still = st.broken.includes(b.invariant);
      const line = document.createElement("div");
      line.className = "broken-invariant";
      line.dataset.invariant = b.invariant;
      line.textContent = `\u2717 ${b.invariant} ${still ? "broken" : "was broken"} (first at step ${b.step})` +
        (b.invariant === D.claimed ? " \u2014 the violation this trace was stored for" : "");
      const doc = document.createElement("div");
      doc.className = "doc";
      doc.textContent = D.invariants[b.invariant] || "";
      v.appendChild(line);
      if (still && st.why && st.why[b.invariant]) {
        const why = document.createElement("div");
        why.className = "why";
        why.textContent = st.why[b.invariant];
        v.appendChild(why);
      }
      v.appendChild(doc);
    }
    if (D.story.length) {           // how it came about: a line per step that matters, each a link to it
      const story = document.createElement("ol");
      story.className = "story";
      story.title = "how it came about";
      for (const t of D.story) {
        const li = document.createElement("li");
        li.textContent = t;
        li.onclick = () => go(+t.match(/^step (\d+)/)[1]);
        story.appendChild(li);
      }
      v.appendChild(story);
    }
    document.body.dataset.broken = st.broken.join(",");
  }

  // the list of steps, each a link (#step=N)
  const breaksAt = new Set(D.first_breaks.map((b) => b.step));
  D.states.forEach((st, i) => {
    const li = document.createElement("li");
    li.dataset.step = i;
    if (breaksAt.has(i)) li.className = "breaks";
    li.textContent = st.action + (breaksAt.has(i) ? "  \u2717 " +
      D.first_breaks.filter((b) => b.step === i).map((b) => b.invariant).join(", ") : "");
    li.onclick = () => go(i);
    $("steps").appendChild(li);
  });

  function go(i) {
    step = Math.max(0, Math.min(N, i));
    $("slider").value = step;
    document.body.dataset.step = step;
    if (location.hash !== `#step=${step}`) history.replaceState(null, "", `#step=${step}`);
    for (const li of $("steps").children) li.classList.toggle("current", Number(li.dataset.step) === step);
    drawCaption();
    drawLanes();
    drawSide();
    drawTimeline();
  }
  $("first").onclick = () => go(0);
  $("prev").onclick = () => go(step - 1);
  $("next").onclick = () => go(step + 1);
  $("last").onclick = () => go(N);
  $("slider").oninput = (e) => go(Number(e.target.value));
  document.addEventListener("keydown", (e) => {
    if (e.target && e.target.id === "slider") return;   // the slider moves itself
    if (e.key === "ArrowRight" || e.key === "l") go(step + 1);
    else if (e.key === "ArrowLeft" || e.key === "h") go(step - 1);
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(N);
    else return;
    e.preventDefault();
  });
  // open at #step=N if the address names one, else at the first violation (the step the trace is for)
  function linked() {
    const m = /^#step=(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) : null;
  }
  window.addEventListener("hashchange", () => { const n = linked(); if (n !== null && n !== step) go(n); });
  const start = linked();
  go(start !== null ? start : (D.first_breaks.length ? D.first_breaks[0].step : 0));
})();
"""
