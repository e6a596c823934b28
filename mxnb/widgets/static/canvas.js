// mxnb SvgCanvas front end (anywidget ES module).
// The single source of truth is mxnb/widgets/static/; extension/ points here.
// Layout is computed in Python: this module only shows the SVG it is sent,
// shows a tooltip on hover, reports clicks on elements whose id names an op
// ("op12"), an entry ("entry-fc1_output") or a var node ("var3_1"), and zooms
// (mouse wheel zooms around the pointer, drag pans, double-click resets).  A timeline zooms
// and pans its TIME axis only: lane names, the axis and the legend stay in view, the axis is
// labelled again, and bars are clipped to the plot.  Zoomed out past the whole drawing, a
// graph's box shrinks with it.  Tooltips near the right / bottom edge open left / above.
// The drawing is shown at its natural size (graphviz / matplotlib units), shrunk to the
// frame's width but never below MIN_SCALE of it: a small graph is not blown up to the full
// width, a wide one scrolls instead of shrinking to unreadable text: never so far that its
// smallest text is drawn under MIN_TEXT_PX (a 40-op DAG read in 6-px text).  Elements that share a
// group with the selected one (the `groups` trait: id -> group key, e.g. a storage block)
// are marked too.  Lineage: with the `links` trait (element id -> the ids of the ops it
// depends on directly, Timeline / DependencyGraph .lineage_links()), a click marks every
// ancestor ("mxnb-ancestor") and descendant ("mxnb-descendant") of the clicked op, across
// lanes; a live view sends the clicked op's lineage itself instead (the `lineage` trait:
// {op, ancestors, descendants}, element ids), computed by the kernel for that op only.  A timeline's idle spans ("idle3": Trace.idle(), coloured by reason) hover with the
// reason, the var and the op.

const CLICKABLE = /^(op\d+|entry-.+|var\d+_\d+|idle\d+)$/;
const IDLE_COLOURS = { nothing_pushed: "#bab0ac", waiting_on_var: "#e15759", ready_not_started: "#edc948" };
const XLINK = "http://www.w3.org/1999/xlink";
const MIN_SCALE = 0.5;
const TIP_GAP = 14; // px between the pointer and its tooltip
const MIN_TEXT_PX = 10; // a drawing shrunk to fit keeps its smallest text at least this tall

/** The smallest font-size of the drawing's text, in its viewBox units (Infinity: no text). */
function smallestFont(svg) {
  let least = Infinity;
  svg.querySelectorAll("text").forEach((text) => {
    const size = parseFloat(text.getAttribute("font-size"));
    if (size > 0 && size < least) least = size;
  });
  return least;
}

/** The narrowest a drawing (not a timeline) may be shown: MIN_SCALE, and its text readable. */
export function minimumWidth(svg, naturalWidth, viewWidth) {
  const least = smallestFont(svg);
  const readable = viewWidth && least < Infinity ? (viewWidth * MIN_TEXT_PX) / least : 0;
  return Math.round(Math.max(naturalWidth * MIN_SCALE, readable));
}

function clickableTarget(node, root) {
  while (node && node !== root) {
    if (node.id && CLICKABLE.test(node.id)) return node;
    node = node.parentNode;
  }
  return null;
}

// ---- the timeline, drawn in the browser -------------------------------------------------
// Python's Timeline.to_data() (or a chrome trace read in the browser) gives lanes of bars
// [op_id, start_ms, end_ms, name, state, error]; a TimelineDrawing draws them as SVG for a
// given width, then takes the deltas of a live view (mxnb/widgets/timeline_feed.py:
// new and changed bars, the span, the critical path as "keep k, add these") and redraws
// only what they touch.
// Bars are drawn in milliseconds inside a group scaled to the width, so a growing time
// range changes one transform and the axis, not every bar.  Level of detail: a grid of
// cells CELL ms wide, CELL the smallest power of two that is at least MIN_BAR px; a bar
// shorter than a cell is pooled with the other short bars starting in its cell into one
// "dense" block (id of its first op, tooltip "N ops"), a longer one is drawn alone.  The
// grid depends only on the scale, so an incrementally updated drawing is the drawing of the
// same data from scratch; only a new lane or a new cell size (the range doubled) redraws
// everything.  The critical path is a thin red line over its blocks (never an outline that
// turns dense bars solid red); a flow arrow joins the blocks of its two ops (one arrow per
// pair of blocks), and none is drawn once there would be more than MAX_FLOWS of them.  Lanes
// that carry a `group` (a trace of several processes) are drawn under their group's band,
// headed by its name.

// op colours (mxnb/widgets/_render.py _PALETTE): none is an idle reason's nor the failure red
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#b07aa1", "#ff9da7", "#9c755f",
  "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a",
  "#c5b0d5", "#c49c94", "#9edae5", "#dbdb8d", "#6b6ecf", "#8ca252"];

/** An op name's family: `delete:nd93` -> `delete` (Python: mxnb.engine.analysis.name_group). */
export function nameGroup(name) {
  const text = String(name);
  return text.includes(":") ? text.split(":")[0] : text;
}

/** The colour of an op name's family, the same in every view: a hash into PALETTE, the
 * function mxnb/widgets/_render.py name_colour computes for the Python views. */
export function opColour(name) {
  let value = 0;
  for (const char of nameGroup(name)) value = (value * 131 + char.codePointAt(0)) % 1_000_003;
  return PALETTE[value % PALETTE.length];
}

/** An op name cut to about `limit` characters for the legend, as mxnb/widgets/_render.py
 * short_name cuts it: a bulk segment keeps its first and last steps and says how many it runs. */
export function shortName(name, limit = 40) {
  if ([...name].length <= limit) return name;
  if (name.startsWith("bulk[") && name.endsWith("]")) {
    const steps = name.slice(5, -1).split(", ");
    if (steps.length > 2) return `bulk[${steps[0]}, …, ${steps[steps.length - 1]}] (${steps.length} steps)`;
  }
  return [...name].slice(0, limit - 1).join("") + "…";
}

const MIN_BAR = 3; // px: a cell of the level-of-detail grid is at least this wide
const MAX_FLOWS = 150; // more arrows than this are a tangle: none is drawn
const LANE = 22; // px per lane
const LABEL_W = 130; // px for lane names
const TOP = 24; // px above the first lane
const SVG_NS = "http://www.w3.org/2000/svg";
const DEFS = '<pattern id="mxnb-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="1.5"/></pattern><marker id="mxnb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>';

function escapeXml(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function niceStep(span, ticks) {
  const raw = span / Math.max(ticks, 1);
  const power = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

function element(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (parent) parent.append(node);
  return node;
}

/** A bar's identity on its lane: its op id, or a wait's start. */
function barKey(bar) {
  return bar[0] === null || bar[0] === undefined ? `wait@${bar[1]}` : bar[0];
}

/** The timeline of `data` drawn `width` px wide, kept up to date by `apply(delta)`. */
let clipCount = 0; // clip paths are named per drawing: several timelines share a page

export class TimelineDrawing {
  constructor(width) {
    this.width = width;
    this.svg = element("svg", { class: "mxnb-timeline", "font-family": "Helvetica,sans-serif" });
    this.svg.setAttributeNS("http://www.w3.org/2000/xmlns/", "xmlns", SVG_NS);
    this.tips = {}; // element id -> hover text
    this.fullDraws = 0; // how many times everything was drawn (tests read it)
    this.lanes = [];
    this.critical = [];
  }

  /** Draw `data` (Timeline.to_data(), with `seq` when it comes from a live feed) from scratch. */
  load(data) {
    this.seq = data.seq;
    this.title = data.title || "engine timeline";
    this.span = data.span || [0, 1];
    this.dataSpan = this.span; // the span the data asks for; this.view (a wheel zoom) overrides it
    this.view = undefined;
    this.from = undefined; // fit(): where the axis starts, kept by the deltas
    this.flows = data.flows || [];
    this.lanes = (data.lanes || []).map((lane) => this.newLane(lane, lane.bars));
    this.critical = (data.critical || []).slice();
    this.idle = data.idle || [];
    this.marks = data.marks || [];
    this.redraw();
  }

  /** Apply a live feed's delta; false (nothing changed) when it does not follow this drawing. */
  apply(delta) {
    if (this.seq === undefined || this.seq === null || delta.base !== this.seq) return false;
    this.seq = delta.seq;
    if (this.idle && this.idle.length) this.setIdle([]); // a quiet run's idle spans: stale now
    this.title = delta.title;
    this.dataSpan = this.from === undefined ? delta.span : [Math.max(this.from, delta.span[0]), delta.span[1]];
    this.span = this.view || this.dataSpan;
    let full = false;
    if (delta.lanes) {
      const old = new Map(this.lanes.map((lane) => [lane.name, lane]));
      this.lanes = delta.lanes.map((meta) => this.newLane(meta, old.has(meta.name) ? [...old.get(meta.name).bars.values()] : []));
      full = true;
    }
    const byName = new Map(this.lanes.map((lane) => [lane.name, lane]));
    const [keep, added] = delta.critical;
    const touched = new Set(this.critical.slice(keep)); // ops whose red line may change
    this.critical = this.critical.slice(0, keep).concat(added);
    for (const id of added) touched.add(id);
    const cell = this.cellFor();
    full = full || cell !== this.cell;
    const dirty = new Map(); // lane -> set of cell keys
    const mark = (lane, key) => {
      if (!dirty.has(lane)) dirty.set(lane, new Set());
      dirty.get(lane).add(key);
    };
    for (const [name, bars] of Object.entries(delta.bars)) {
      const lane = byName.get(name);
      for (const bar of bars) {
        const key = barKey(bar);
        lane.bars.set(key, bar);
        if (full) continue;
        const was = lane.placed.get(key);
        if (was !== undefined) {
          lane.cells.get(was).delete(key);
          mark(lane, was);
        }
        mark(lane, this.place(lane, key, bar));
      }
    }
    if (full) {
      this.redraw();
      return true;
    }
    this.criticalSet = new Set(this.critical);
    for (const id of touched) {
      const where = this.opCell.get(id);
      if (where) mark(where[0], where[1]);
    }
    for (const [lane, keys] of dirty) for (const key of keys) this.drawCell(lane, key);
    this.drawFrame();
    return true;
  }

  /** Draw everything again at the current width (a new lane, cell size or width; a reset). */
  redraw() {
    this.fullDraws += 1;
    this.cell = this.cellFor();
    this.criticalSet = new Set(this.critical);
    this.opCell = new Map(); // op id -> [lane, cell key]
    this.tips = {};
    const bottom = this.layoutRows();
    const height = bottom + 58; // the axis, its title and the legend
    this.height = height;
    this.svg.replaceChildren();
    for (const [name, value] of Object.entries({ width: this.width, height, viewBox: `0 0 ${this.width} ${height}` })) {
      this.svg.setAttribute(name, value);
    }
    const defs = element("defs", {}, this.svg);
    defs.innerHTML = DEFS;
    this.hatch = defs.querySelector("pattern");
    this.titleText = element("text", { x: 4, y: 14, "font-size": 11, fill: "#222" }, this.svg);
    this.families = new Set(); // op families drawn, in order of first appearance (the legend)
    this.legend = element("g", { class: "mxnb-legend" }, this.svg);
    this.axis = element("g", { class: "mxnb-axis" }, this.svg);
    const lanesGroup = element("g", { class: "mxnb-lanes" }, this.svg);
    // bars, their labels and arrows are clipped to the plot: zoomed in, none covers a lane's name
    const clip = `mxnb-clip-${++clipCount}`;
    const clipPath = element("clipPath", { id: clip }, defs);
    element("rect", { x: LABEL_W, y: 0, width: this.scale().plotW, height: bottom }, clipPath);
    this.drawGroups(lanesGroup);
    this.lanes.forEach((lane, row) => {
      const y = lane.y;
      element("text", { x: LABEL_W - 6, y: y + 14, "text-anchor": "end", "font-size": 10, fill: "#333" }, lanesGroup).textContent = lane.name;
      if (row && lane.device !== this.lanes[row - 1].device) {
        element("line", { x1: 0, x2: this.width, y1: y - 1, y2: y - 1, stroke: "#bbb", "stroke-width": 0.8 }, lanesGroup);
      }
    });
    const clipped = element("g", { class: "mxnb-clipped", "clip-path": `url(#${clip})` }, lanesGroup);
    this.plot = element("g", { class: "mxnb-plot" }, clipped);
    this.drawIdle();
    this.labels = element("g", { class: "mxnb-labels", "pointer-events": "none" }, clipped);
    this.lanes.forEach((lane) => {
      lane.g = element("g", {}, this.plot);
      lane.cells = new Map();
      lane.placed = new Map();
      lane.els = new Map();
      for (const [key, bar] of lane.bars) this.place(lane, key, bar);
      for (const key of lane.cells.keys()) this.drawCell(lane, key);
    });
    this.drawMarks();
    this.drawFlows(clipped);
    this.drawFrame();
  }

  /** Fit the time axis to the bars (not to when the recording began); later deltas keep its start. */
  fit() {
    let first = Infinity;
    let last = -Infinity;
    for (const lane of this.lanes) {
      for (const bar of lane.bars.values()) {
        first = Math.min(first, bar[1]);
        last = Math.max(last, bar[2]);
      }
    }
    if (!isFinite(first)) return;
    this.from = first;
    this.view = undefined;
    this.span = this.dataSpan = [first, Math.max(last, first + 1e-3)];
    this.redraw();
  }

  /** The time (ms) under x px of the drawing (the wheel's pointer). */
  timeAt(x) {
    const { t0, px } = this.scale();
    return t0 + (x - LABEL_W) / px;
  }

  /** Zoom the TIME axis only, by `factor` (< 1 zooms in) around x px: lanes and labels stay. */
  zoomTime(x, factor) {
    const [t0, t1] = this.span;
    const t = Math.min(Math.max(this.timeAt(x), t0), t1);
    const span = Math.max((t1 - t0) * factor, 1e-6);
    const start = t - (t - t0) * factor;
    this.view = this.span = [start, start + span];
    this.redraw();
  }

  /** Slide the time axis by dx px from `span` (a drag that began at that span). */
  panTime(span, dx) {
    const shift = -dx / this.scale().px;
    this.view = this.span = [span[0] + shift, span[1] + shift];
    this.redraw();
  }

  /** Back to the span the data asks for (double-click). */
  resetZoom() {
    this.view = undefined;
    this.span = this.dataSpan;
    this.redraw();
  }

  /** Each lane's y, a header row before each group's first lane; returns the y below the last. */
  layoutRows() {
    let y = TOP;
    let group;
    this.groups = [];
    for (const lane of this.lanes) {
      if (lane.group !== undefined && lane.group !== group) {
        group = lane.group;
        this.groups.push({ name: group, y, lanes: 0 });
        y += LANE;
      }
      if (lane.group !== undefined) this.groups[this.groups.length - 1].lanes += 1;
      lane.y = y;
      y += LANE;
    }
    this.bottom = y;
    return y;
  }

  /** A band per group of lanes (a process of a job's trace): its name over its lanes. */
  drawGroups(parent) {
    this.groups.forEach((group, index) => {
      const g = element("g", { class: "mxnb-process" }, parent);
      g.dataset.process = group.name;
      element("rect", {
        x: 0, y: group.y, width: this.width, height: LANE * (group.lanes + 1),
        fill: index % 2 ? "#ffffff" : "#f3f6fa", stroke: "#c8d0da", "stroke-width": 0.8,
      }, g);
      element("text", { x: 6, y: group.y + 15, "font-size": 11, "font-weight": "bold", fill: "#1f3b5a" }, g).textContent = group.name;
    });
  }

  /** Marks [op_id, colour, label] (a trace diff's largest changes): an outline round the op's block. */
  drawMarks() {
    const g = element("g", { class: "mxnb-marks", "pointer-events": "none" }, this.plot);
    for (const [op, colour, label] of this.marks || []) {
      const where = this.opCell.get(op);
      if (!where) continue;
      const [lane, key] = where;
      const drawn = lane.els.get(key);
      element("rect", {
        class: "mxnb-mark", x: drawn.start, y: lane.y + 1, width: drawn.end - drawn.start, height: LANE - 2,
        fill: "none", stroke: colour, "stroke-width": 2.5, "vector-effect": "non-scaling-stroke",
      }, g).dataset.op = op;
      if (drawn.id) this.tips[drawn.id] = `${this.tips[drawn.id]} | ${label}`;
    }
  }

  /** A live view's idle spans (a quiet run's): drawn until the next delta. */
  setIdle(idle) {
    for (const old of this.plot.querySelectorAll("g.mxnb-idle")) old.remove();
    for (const id of Object.keys(this.tips)) if (id.startsWith("idle")) delete this.tips[id];
    this.idle = idle || [];
    this.drawIdle();
  }

  /** Idle spans [lane, start_ms, end_ms, reason, text]: a strip under the lane's bars, by reason. */
  drawIdle() {
    const rows = new Map(this.lanes.map((lane) => [lane.name, lane.y]));
    const g = element("g", { class: "mxnb-idle" }, this.plot);
    this.plot.insertBefore(g, this.plot.firstChild); // under the bars
    (this.idle || []).forEach(([name, start, end, reason, text], index) => {
      const y = rows.get(name);
      if (y === undefined) return;
      const rect = element("rect", {
        class: `mxnb-idle-span mxnb-idle-${reason}`, x: start, y: y + LANE - 6,
        width: Math.max(end - start, 0), height: 4, fill: IDLE_COLOURS[reason] || "#ccc",
        "fill-opacity": 0.8,
      }, g);
      rect.id = `idle${index}`;
      this.tips[rect.id] = text;
    });
  }

  /** The drawn blocks and ops (tests and the lab test read them). */
  counts() {
    let ops = 0;
    let last = -1;
    for (const lane of this.lanes) {
      for (const key of lane.bars.keys()) {
        if (typeof key === "number") {
          ops += 1;
          last = Math.max(last, key);
        }
      }
    }
    return { ops, last, blocks: this.svg.querySelectorAll("rect.mxnb-bar").length };
  }

  newLane(meta, bars) {
    const lane = { name: meta.name, kind: meta.kind, device: meta.device, group: meta.group, bars: new Map() };
    for (const bar of bars) lane.bars.set(barKey(bar), bar);
    return lane;
  }

  scale() {
    const [t0, t1] = this.span;
    const plotW = Math.max(this.width - LABEL_W - 20, 100);
    return { t0, t1, plotW, px: plotW / Math.max(t1 - t0, 1e-9) };
  }

  /** The level of detail's cell, in ms: the smallest power of two at least MIN_BAR px wide. */
  cellFor() {
    return 2 ** Math.ceil(Math.log2(MIN_BAR / this.scale().px));
  }

  /** Put a bar in its cell (a short one) or a cell of its own (a long one); returns the cell's key. */
  place(lane, key, bar) {
    const long = bar[2] - bar[1] >= this.cell;
    const cellKey = long ? `bar:${key}` : Math.floor(bar[1] / this.cell);
    if (!lane.cells.has(cellKey)) lane.cells.set(cellKey, new Map());
    lane.cells.get(cellKey).set(key, bar);
    lane.placed.set(key, cellKey);
    return cellKey;
  }

  /** A bar's colour (opColour); the families seen feed the legend. */
  colour(name) {
    this.families.add(nameGroup(name));
    return opColour(name);
  }

  /** (Re)draw one cell of a lane: one bar, or one dense block of its short bars. */
  drawCell(lane, key) {
    const old = lane.els.get(key);
    if (old) {
      old.g.remove();
      if (old.id) delete this.tips[old.id];
      lane.els.delete(key);
    }
    const bars = [...(lane.cells.get(key) || new Map()).values()].sort((a, b) => a[1] - b[1]);
    if (!bars.length) {
      lane.cells.delete(key);
      return;
    }
    const first = bars[0];
    const start = first[1];
    const end = Math.max(...bars.map((b) => b[2]));
    const width = Math.max(end - start, this.cell / 4);
    const id = first[0] === null || first[0] === undefined ? null : `op${first[0]}`;
    const wait = first[4] === "wait";
    const dense = bars.length > 1;
    const failed = bars.some((b) => b[4] === "failed" || b[4] === "skipped");
    const g = element("g", {}, lane.g);
    const rect = element("rect", {
      class: dense ? "mxnb-bar mxnb-dense" : "mxnb-bar", x: start, y: lane.y + 3, width, height: LANE - 6,
      fill: wait ? "url(#mxnb-hatch)" : this.colour(first[3]), stroke: failed ? "#c62828" : "#333",
      "stroke-width": failed ? 1.2 : 0.3, "fill-opacity": dense ? 0.75 : 1, "vector-effect": "non-scaling-stroke",
    }, g);
    if (id) {
      rect.id = id;
      const ms = (b) => (b[2] - b[1]).toFixed(3);
      this.tips[id] = dense
        ? `${bars.length} ops #${first[0]}..#${bars[bars.length - 1][0]} on ${lane.name}: ${[...new Set(bars.map((b) => b[3]))].slice(0, 6).join(", ")}`
        : `#${first[0]} ${first[3]} [${first[4]}] | worker ${lane.name} | ${ms(first)} ms${first[5] ? ` | ${first[5]}` : ""}`;
    }
    if (bars.some((b) => this.criticalSet.has(b[0]))) {
      element("rect", { class: "mxnb-critical", x: start, y: lane.y + 1, width, height: 2, fill: "#d62728" }, g);
    }
    for (const b of bars) if (b[0] !== null && b[0] !== undefined) this.opCell.set(b[0], [lane, key]);
    lane.els.set(key, { g, id, start, end: start + width, single: dense ? null : first });
  }

  /** What moves when the range grows: the plot's scale, the axis, the bar labels, the title. */
  drawFrame() {
    const { t0, t1, plotW, px } = this.scale();
    this.plot.setAttribute("transform", `translate(${LABEL_W - t0 * px},0) scale(${px},1)`);
    this.hatch.setAttribute("patternTransform", `scale(${1 / px},1) rotate(45)`);
    const x = (t) => LABEL_W + (t - t0) * px;
    const out = [];
    for (const lane of this.lanes) {
      // a bar's name inside it when it fits, and not over the name before it: bars of a lane
      // may overlap (a kvstore lane's requests in flight), so its labels go left to right
      const fits = [...lane.els.values()].filter((drawn) => {
        const label = drawn.single ? drawn.single[3] : "";
        return label && (drawn.end - drawn.start) * px > 6.5 * label.length + 6;
      });
      let free = -Infinity; // where the lane's last label ends (px)
      for (const drawn of fits.sort((a, b) => a.start - b.start)) {
        const left = x(drawn.start) + 3;
        if (left < free) continue;
        const label = drawn.single[3];
        out.push(`<text x="${left.toFixed(2)}" y="${lane.y + 15}" font-size="10" fill="#111">${escapeXml(label)}</text>`);
        free = left + 6.5 * label.length + 3;
      }
    }
    this.labels.innerHTML = out.join("");
    const axisY = this.bottom + 4;
    const span = Math.max(t1 - t0, 1e-9);
    const step = niceStep(span, Math.floor(plotW / 90));
    const ticks = [`<line x1="${LABEL_W}" x2="${LABEL_W + plotW}" y1="${axisY}" y2="${axisY}" stroke="#888"/>`];
    for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
      const tx = x(t).toFixed(1);
      ticks.push(`<line x1="${tx}" x2="${tx}" y1="${TOP}" y2="${axisY + 4}" stroke="#eee"/><text x="${tx}" y="${axisY + 16}" text-anchor="middle" font-size="9" fill="#555">${+t.toFixed(6)}</text>`);
    }
    ticks.push(`<text x="${LABEL_W + plotW / 2}" y="${axisY + 30}" text-anchor="middle" font-size="10" fill="#333">time since first event (ms)</text>`);
    this.axis.innerHTML = ticks.join("");
    this.drawLegend(axisY + 44);
    const red = this.criticalSet.size ? ' — <tspan fill="#d62728">red line: critical path</tspan>' : "";
    this.titleText.innerHTML = `${escapeXml(this.title)}${red}`;
    const { ops, last } = this.counts();
    this.svg.setAttribute("data-ops", ops);
    this.svg.setAttribute("data-span", `${t0} ${t1}`);
    this.svg.setAttribute("data-last-op", last);
  }

  /** A swatch and the name of each op family drawn (the first 14), in a row at `y`. */
  drawLegend(y) {
    const out = [];
    let x = LABEL_W;
    for (const family of [...this.families].slice(0, 14)) {
      const label = shortName(family);
      const w = 18 + 6 * label.length;
      if (x + w > this.width) break;
      out.push(`<rect x="${x}" y="${y - 9}" width="10" height="10" fill="${opColour(family)}" stroke="#333" stroke-width="0.3"/><text x="${x + 13}" y="${y}" font-size="9.5" fill="#333">${escapeXml(label)}</text>`);
      x += w + 8;
    }
    this.legend.innerHTML = out.join("");
  }

  /** The flow arrows (a trace file's viewer sends them): one per pair of blocks, none past MAX_FLOWS. */
  drawFlows(parent) {
    if (!this.flows.length) return;
    const { t0, px } = this.scale();
    const x = (t) => LABEL_W + (t - t0) * px;
    const legs = new Map(); // "from block>to block" -> [[lane, block], [lane, block], labels]
    for (const [from, to, label] of this.flows) {
      const a = this.opCell.get(from);
      const b = this.opCell.get(to);
      if (!a || !b) continue;
      const ea = a[0].els.get(a[1]);
      const eb = b[0].els.get(b[1]);
      if (ea === eb) continue; // both ops in one pooled block
      const key = `${ea.id}>${eb.id}`;
      if (legs.has(key)) legs.get(key)[2].add(label);
      else legs.set(key, [[a[0], ea], [b[0], eb], new Set([label])]);
    }
    if (legs.size > MAX_FLOWS) return;
    const out = [];
    for (const [[la, ea], [lb, eb], labels] of legs.values()) {
      const ax = x(ea.end), ay = la.y + LANE / 2, bx = x(eb.start), by = lb.y + LANE / 2;
      const mid = (ax + bx) / 2;
      out.push(`<path class="mxnb-flow" d="M${ax.toFixed(1)},${ay} C${mid.toFixed(1)},${ay} ${mid.toFixed(1)},${by} ${bx.toFixed(1)},${by}" fill="none" stroke="#555" stroke-width="0.8" marker-end="url(#mxnb-arrow)"><title>${escapeXml([...labels].join(", "))}</title></path>`);
    }
    element("g", { class: "mxnb-flows" }, parent).innerHTML = out.join("");
  }
}

/** [ancestors, descendants] of element `id`, given `links` (id -> ids it depends on directly). */
export function lineage(links, id) {
  const after = {};
  for (const [other, preds] of Object.entries(links)) {
    for (const pred of preds) (after[pred] = after[pred] || []).push(other);
  }
  const reach = (start, edges) => {
    const seen = new Set([start]);
    const stack = [start];
    while (stack.length) {
      for (const next of edges[stack.pop()] || []) {
        if (!seen.has(next)) {
          seen.add(next);
          stack.push(next);
        }
      }
    }
    seen.delete(start);
    return [...seen];
  };
  return [reach(id, links), reach(id, after)];
}

/** SVG text of a timeline `data` drawn `width` px wide; `tips` (id -> text) is filled in. */
export function renderTimeline(data, width, tips = {}) {
  const drawing = new TimelineDrawing(width);
  drawing.load(data);
  Object.assign(tips, drawing.tips);
  return drawing.svg.outerHTML;
}

function render({ model, el }) {
  // The tooltip is placed in root's coordinates: root is positioned (canvas.css), so it is
  // the tooltip's containing block whatever the page around el looks like.
  const root = document.createElement("div");
  root.className = "mxnb-canvas-root";
  const frame = document.createElement("div");
  frame.className = "mxnb-canvas";
  const tip = document.createElement("div");
  tip.className = "mxnb-tooltip";
  root.append(frame, tip);
  el.append(root);

  let baseBox = null;
  let box = null;
  let drag = null;
  let anchorTips = {};

  // graphviz puts a node's tooltip= text on an <a xlink:title> inside the node, which the
  // browser shows as a second, native tooltip after a delay: take it over as the node's
  // hover text (after the model's tooltips, before the node's <title>, which is its id).
  function takeAnchorTitles() {
    anchorTips = {};
    frame.querySelectorAll("a").forEach((anchor) => {
      const text = anchor.getAttributeNS(XLINK, "title") || anchor.getAttribute("xlink:title");
      const owner = text ? clickableTarget(anchor, frame) : null;
      if (!owner) return;
      if (!(owner.id in anchorTips)) anchorTips[owner.id] = text;
      anchor.removeAttributeNS(XLINK, "title");
      anchor.removeAttribute("xlink:title");
    });
  }

  function svgElement() {
    return frame.querySelector("svg");
  }

  function applyBox() {
    const svg = svgElement();
    if (svg && box) svg.setAttribute("viewBox", box.join(" "));
  }

  let drawing = null; // the TimelineDrawing shown, when the timeline trait is set
  let drawnWidth = 0; // the frame's width the timeline was laid out for
  let resyncAsked = false;

  function draw() {
    const data = model.get("timeline");
    resyncAsked = false;
    if (data && data.lanes) {
      drawnWidth = frame.clientWidth || el.clientWidth || 0;
      drawing = new TimelineDrawing(Math.max(drawnWidth - 2, 400));
      drawing.load(data);
      frame.replaceChildren(drawing.svg);
      // a view drawn after deltas were sent holds an older whole timeline: ask for it again
      const latest = model.get("timeline_seq");
      if (data.seq !== undefined && latest > data.seq) resync(latest);
    } else {
      drawing = null;
      frame.innerHTML = model.get("svg") || "";
    }
    adopt(false);
  }

  // A live timeline's delta (mxnb/widgets/timeline_feed.py): applied where it follows the
  // drawing, else (this view missed one) the kernel is asked for everything again.
  function onCustom(message) {
    if (message && message.timeline_fit) { // the panel's Fit: the axis from the first bar to the last
      if (drawing) {
        drawing.fit();
        adopt(false);
      }
      return;
    }
    const idle = message && message.timeline_idle;
    if (idle) {
      if (drawing && drawing.seq === idle.seq) drawing.setIdle(idle.spans);
      return;
    }
    const delta = message && message.timeline_delta;
    if (!delta) return;
    const before = drawing ? drawing.fullDraws : 0;
    if (!drawing || !drawing.apply(delta)) {
      resync(delta.seq);
      return;
    }
    if (drawing.fullDraws !== before) adopt(true);
    markSelected();
  }

  function resync(seq) {
    if (resyncAsked || !model.send) return;
    resyncAsked = true;
    model.send({ timeline_resync: seq });
  }

  // Size the drawing shown in frame; `keepZoom`: a timeline drawn again at the same size
  // keeps the user's zoom.
  function adopt(keepZoom) {
    const svg = svgElement();
    const oldBase = baseBox;
    shrunk = 1;
    sized = null;
    baseBox = null;
    if (svg) {
      const vb = svg.getAttribute("viewBox");
      const sized = svg.getAttribute("width") && svg.width && svg.width.baseVal;
      const natural = sized ? [svg.width.baseVal.value, svg.height.baseVal.value] : null;
      if (vb) baseBox = vb.split(/[\s,]+/).map(Number);
      else if (natural) baseBox = [0, 0, natural[0], natural[1]];
      svg.removeAttribute("width");
      svg.removeAttribute("height");
      const width = natural ? natural[0] : baseBox ? baseBox[2] : 0;
      svg.style.width = width ? `${width}px` : "100%";
      svg.style.maxWidth = "100%";
      const least = drawing ? Math.round(width * MIN_SCALE) : minimumWidth(svg, width, baseBox ? baseBox[2] : 0);
      svg.style.minWidth = width ? `${least}px` : "";
      svg.style.height = "auto";
      const same = keepZoom && box && oldBase && baseBox && oldBase.join() === baseBox.join();
      if (!same) box = baseBox ? baseBox.slice() : null;
      applyBox();
    }
    takeAnchorTitles();
    markSelected();
  }

  // Zoomed out past the whole drawing, the drawing's box shrinks with it (not a small picture in
  // a big empty box); zoomed in again, it grows back to its size first.  True when it did either.
  let shrunk = 1;
  let sized = null; // the drawing's own size styles, kept while it is shrunk
  function shrinkOrGrow(svg, rect, factor) {
    const whole = baseBox && box[2] * factor > baseBox[2] * (1 + 1e-6) && box[2] >= baseBox[2] * (1 - 1e-6);
    if (!(factor > 1 && whole) && !(factor < 1 && shrunk < 1)) return false;
    const width = rect.width / shrunk; // the drawing's width before any shrinking
    if (shrunk === 1) sized = { width: svg.style.width, minWidth: svg.style.minWidth, maxWidth: svg.style.maxWidth };
    shrunk = shrunk / factor > 1 - 1e-6 ? 1 : shrunk / factor;
    box = baseBox.slice();
    applyBox();
    if (shrunk === 1) {
      unshrink(svg);
      return true;
    }
    svg.style.minWidth = "0";
    svg.style.maxWidth = "none";
    svg.style.width = `${width * shrunk}px`;
    return true;
  }

  function unshrink(svg) {
    if (sized) Object.assign(svg.style, sized);
    sized = null;
    shrunk = 1;
  }

  function markSelected() {
    for (const name of ["mxnb-selected", "mxnb-related"]) {
      frame.querySelectorAll(`.${name}`).forEach((n) => n.classList.remove(name));
    }
    for (const name of ["mxnb-ancestor", "mxnb-descendant"]) {
      frame.querySelectorAll(`.${name}`).forEach((n) => n.classList.remove(name));
    }
    const id = model.get("selected");
    if (!id) return;
    const node = frame.querySelector(`[id="${CSS.escape(id)}"]`);
    if (node) node.classList.add("mxnb-selected");
    const links = model.get("links") || {};
    const given = model.get("lineage") || {};
    if (given.op === id || links[id]) {
      const [ancestors, descendants] =
        given.op === id ? [given.ancestors || [], given.descendants || []] : lineage(links, id);
      for (const [ids, name] of [[ancestors, "mxnb-ancestor"], [descendants, "mxnb-descendant"]]) {
        for (const other of ids) {
          const found = frame.querySelector(`[id="${CSS.escape(other)}"]`);
          if (found) found.classList.add(name);
        }
      }
    }
    const groups = model.get("groups") || {};
    const group = groups[id];
    if (group === undefined) return;
    for (const [other, key] of Object.entries(groups)) {
      if (key !== group || other === id) continue;
      const related = frame.querySelector(`[id="${CSS.escape(other)}"]`);
      if (related) related.classList.add("mxnb-related");
    }
  }

  frame.addEventListener("click", (event) => {
    const node = clickableTarget(event.target, frame);
    if (!node) return;
    model.set("selected", node.id);
    model.set("clicks", (model.get("clicks") || 0) + 1);
    model.save_changes();
  });

  frame.addEventListener("mousemove", (event) => {
    if (drag && drawing && drag.span) { // a timeline: the time axis slides
      const rect = svgElement().getBoundingClientRect();
      drawing.panTime(drag.span, ((event.clientX - drag.cx) * drawing.width) / rect.width);
      adopt(false);
      return;
    }
    if (drag && box) {
      const svg = svgElement();
      const scale = box[2] / svg.getBoundingClientRect().width;
      box[0] = drag.x0 - (event.clientX - drag.cx) * scale;
      box[1] = drag.y0 - (event.clientY - drag.cy) * scale;
      applyBox();
      return;
    }
    const node = clickableTarget(event.target, frame);
    const tips = model.get("tooltips") || {};
    const drawnTips = drawing ? drawing.tips : {};
    let text = node ? tips[node.id] || drawnTips[node.id] || anchorTips[node.id] : null;
    if (node && !text) {
      const title = node.querySelector("title");
      text = title ? title.textContent : null;
    }
    if (text) {
      tip.textContent = text;
      tip.style.display = "block";
      // From clientX/Y against root: offsetX/Y count from the <svg> (Chromium), but the
      // tooltip was positioned against el's nearest positioned ancestor, so it showed up
      // away from the pointer by the svg's offset in that ancestor.
      // Near the right or bottom edge it goes left of / above the pointer: never clipped.
      const origin = root.getBoundingClientRect();
      const x = event.clientX - origin.left;
      const y = event.clientY - origin.top;
      const right = x + TIP_GAP + tip.offsetWidth > root.clientWidth;
      const below = event.clientY + TIP_GAP + tip.offsetHeight > window.innerHeight;
      tip.style.left = `${right ? Math.max(0, x - TIP_GAP - tip.offsetWidth) : x + TIP_GAP}px`;
      tip.style.top = `${below ? Math.max(0, y - TIP_GAP - tip.offsetHeight) : y + TIP_GAP}px`;
    } else {
      tip.style.display = "none";
    }
  });

  frame.addEventListener("mouseleave", () => {
    tip.style.display = "none";
    drag = null;
  });

  frame.addEventListener(
    "wheel",
    (event) => {
      const svg = svgElement();
      // deltaY 0 is a sideways scroll (trackpad swipe): not a zoom, and it used to zoom in.
      if (!svg || !box || event.deltaY === 0) return;
      event.preventDefault();
      const rect = svg.getBoundingClientRect();
      const fx = (event.clientX - rect.left) / rect.width;
      const fy = (event.clientY - rect.top) / rect.height;
      const factor = event.deltaY > 0 ? 1.15 : 1 / 1.15;
      if (drawing) { // a timeline: the time axis zooms, the lanes and their names stay
        drawing.zoomTime(fx * drawing.width, factor);
        adopt(false);
        return;
      }
      if (shrinkOrGrow(svg, rect, factor)) return;
      const width = box[2] * factor;
      const height = box[3] * factor;
      box = [box[0] + (box[2] - width) * fx, box[1] + (box[3] - height) * fy, width, height];
      applyBox();
    },
    { passive: false }
  );

  frame.addEventListener("mousedown", (event) => {
    if (!box || clickableTarget(event.target, frame)) return;
    drag = { cx: event.clientX, cy: event.clientY, x0: box[0], y0: box[1], span: drawing ? drawing.span.slice() : null };
  });
  frame.addEventListener("mouseup", () => {
    drag = null;
  });
  frame.addEventListener("dblclick", () => {
    if (drawing) { // a live timeline: drawn again from scratch, zoom reset
      drawing.resetZoom();
      adopt(false);
    } else if (baseBox) {
      box = baseBox.slice();
      applyBox();
      unshrink(svgElement()); // its own size again after a zoom out past the whole drawing
    }
  });

  // a timeline is laid out for the frame's width: draw it again when that changes much
  const resized = new ResizeObserver(() => {
    const width = frame.clientWidth;
    if (drawing && width && Math.abs(width - drawnWidth) > 0.1 * drawnWidth) {
      drawnWidth = width;
      drawing.width = Math.max(width - 2, 400);
      drawing.redraw();
      adopt(false);
    }
  });
  resized.observe(frame);
  model.on("change:svg", draw);
  model.on("change:timeline", draw);
  model.on("change:selected", markSelected);
  model.on("change:links", markSelected);
  model.on("change:lineage", markSelected);
  model.on("change:groups", markSelected);
  model.on("msg:custom", onCustom);
  draw();
  return () => {
    resized.disconnect();
    model.off("change:svg", draw);
    model.off("change:timeline", draw);
    model.off("change:selected", markSelected);
    model.off("change:links", markSelected);
    model.off("change:lineage", markSelected);
    model.off("change:groups", markSelected);
    model.off("msg:custom", onCustom);
  };
}

// render only through the default export: anywidget warns about a named `render` export
export default { render };
