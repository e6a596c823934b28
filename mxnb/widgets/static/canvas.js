// mxnb SvgCanvas front end (anywidget ES module).
// The single source of truth is mxnb/widgets/static/; extension/ points here.
// Layout is computed in Python: this module only shows the SVG it is sent,
// shows a tooltip on hover, reports clicks on elements whose id names an op
// ("op12"), an entry ("entry-fc1_output") or a var node ("var3_1"), and zooms
// (mouse wheel zooms around the pointer, drag pans, double-click resets).
// The drawing is shown at its natural size (graphviz / matplotlib units), shrunk to the
// frame's width but never below MIN_SCALE of it: a small graph is not blown up to the full
// width, a wide one scrolls instead of shrinking to unreadable text.  Elements that share a
// group with the selected one (the `groups` trait: id -> group key, e.g. a storage block)
// are marked too.

const CLICKABLE = /^(op\d+|entry-.+|var\d+_\d+)$/;
const XLINK = "http://www.w3.org/1999/xlink";
const MIN_SCALE = 0.5;

function clickableTarget(node, root) {
  while (node && node !== root) {
    if (node.id && CLICKABLE.test(node.id)) return node;
    node = node.parentNode;
  }
  return null;
}

// ---- the timeline, drawn in the browser -------------------------------------------------
// Python's Timeline.to_data() (or a chrome trace read in the browser) gives lanes of bars
// [op_id, start_ms, end_ms, name, state, error]; renderTimeline turns them into SVG for a
// given width.  Level of detail: a bar narrower than MIN_BAR px is merged with its
// neighbours on the lane into one "dense" block (id of its first op, tooltip "N ops"), so
// a few thousand ops draw in milliseconds and stay legible; the critical path is a thin red
// line over its bars (never an outline that turns dense bars solid red); dependency flow
// arrows are drawn only while no bar is merged and few enough bars are.

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
  "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];
const MIN_BAR = 3; // px: narrower bars are merged
const MAX_FLOWS = 300; // arrows drawn only when at most this many bars are
const LANE = 22; // px per lane
const LABEL_W = 130; // px for lane names

function escapeXml(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function niceStep(span, ticks) {
  const raw = span / Math.max(ticks, 1);
  const power = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/** SVG text of a timeline `data` drawn `width` px wide; `tips` (id -> text) is filled in. */
export function renderTimeline(data, width, tips = {}) {
  const lanes = data.lanes || [];
  const [t0, t1] = data.span || [0, 1];
  const span = Math.max(t1 - t0, 1e-9);
  const plotW = Math.max(width - LABEL_W - 20, 100);
  const x = (t) => LABEL_W + ((t - t0) / span) * plotW;
  const critical = new Set(data.critical || []);
  const colours = new Map();
  const colour = (name) => {
    const group = name.includes(":") ? name.split(":")[0] : name;
    if (!colours.has(group)) colours.set(group, PALETTE[colours.size % PALETTE.length]);
    return colours.get(group);
  };
  const top = 24;
  const height = top + LANE * lanes.length + 40;
  const out = [];
  const where = new Map(); // op id -> [x0, x1, y] of what was drawn for it
  let drawnBars = 0;
  let merged = false;
  lanes.forEach((lane, row) => {
    const y = top + row * LANE;
    out.push(`<text x="${LABEL_W - 6}" y="${y + 14}" text-anchor="end" font-size="10" fill="#333">${escapeXml(lane.name)}</text>`);
    if (row && lane.device !== lanes[row - 1].device) {
      out.push(`<line x1="0" x2="${width}" y1="${y - 1}" y2="${y - 1}" stroke="#bbb" stroke-width="0.8"/>`);
    }
    const bars = lane.bars.slice().sort((a, b) => a[1] - b[1]);
    let i = 0;
    while (i < bars.length) {
      const bar = bars[i];
      const x0 = x(bar[1]);
      let x1 = Math.max(x(bar[2]), x0 + 0.5);
      let j = i + 1;
      if (x1 - x0 < MIN_BAR) { // merge the run of narrow neighbours into one block
        while (j < bars.length && x(bars[j][1]) <= x1 + 1 && x(bars[j][2]) - x(bars[j][1]) < MIN_BAR && x1 - x0 < 40) {
          x1 = Math.max(x1, x(bars[j][2]));
          j += 1;
        }
      }
      const group = bars.slice(i, j);
      const first = group[0];
      const id = first[0] === null || first[0] === undefined ? null : `op${first[0]}`;
      const wait = first[4] === "wait";
      const fill = wait ? "url(#mxnb-hatch)" : colour(first[3]);
      const failed = group.some((b) => b[4] === "failed" || b[4] === "skipped");
      const attrs = id ? ` id="${id}"` : "";
      const cls = group.length > 1 ? "mxnb-bar mxnb-dense" : "mxnb-bar";
      const w = Math.max(x1 - x0, 1);
      out.push(`<rect${attrs} class="${cls}" x="${x0.toFixed(2)}" y="${y + 3}" width="${w.toFixed(2)}" height="${LANE - 6}" fill="${fill}" stroke="${failed ? "#c62828" : "#333"}" stroke-width="${failed ? 1.2 : 0.3}" fill-opacity="${group.length > 1 ? 0.75 : 1}"/>`);
      drawnBars += 1;
      merged = merged || group.length > 1;
      if (id) {
        const ms = (b) => (b[2] - b[1]).toFixed(3);
        tips[id] = group.length > 1
          ? `${group.length} ops #${first[0]}..#${group[group.length - 1][0]} on ${lane.name}: ${[...new Set(group.map((b) => b[3]))].slice(0, 6).join(", ")}`
          : `#${first[0]} ${first[3]} [${first[4]}] | worker ${lane.name} | ${ms(first)} ms${first[5] ? ` | ${first[5]}` : ""}`;
      }
      for (const b of group) if (b[0] !== null) where.set(b[0], [x0, x1, y]);
      if (group.some((b) => critical.has(b[0]))) {
        out.push(`<rect class="mxnb-critical" x="${x0.toFixed(2)}" y="${y + 1}" width="${w.toFixed(2)}" height="2" fill="#d62728"/>`);
      }
      const label = group.length === 1 ? first[3] : "";
      if (label && w > 6.5 * label.length + 6) {
        out.push(`<text x="${(x0 + 3).toFixed(2)}" y="${y + 15}" font-size="10" fill="#111" pointer-events="none">${escapeXml(label)}</text>`);
      }
      i = j;
    }
  });
  const flows = data.flows || [];
  if (flows.length && !merged && drawnBars <= MAX_FLOWS) {
    for (const [from, to, label] of flows) {
      const a = where.get(from);
      const b = where.get(to);
      if (!a || !b) continue;
      const ax = a[1], ay = a[2] + LANE / 2, bx = b[0], by = b[2] + LANE / 2;
      const mid = (ax + bx) / 2;
      out.push(`<path class="mxnb-flow" d="M${ax.toFixed(1)},${ay} C${mid.toFixed(1)},${ay} ${mid.toFixed(1)},${by} ${bx.toFixed(1)},${by}" fill="none" stroke="#555" stroke-width="0.8" marker-end="url(#mxnb-arrow)"><title>${escapeXml(label)}</title></path>`);
    }
  }
  const axisY = top + LANE * lanes.length + 4;
  const step = niceStep(span, Math.floor(plotW / 90));
  out.push(`<line x1="${LABEL_W}" x2="${LABEL_W + plotW}" y1="${axisY}" y2="${axisY}" stroke="#888"/>`);
  for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
    const tx = x(t).toFixed(1);
    out.push(`<line x1="${tx}" x2="${tx}" y1="${top}" y2="${axisY + 4}" stroke="#eee"/><text x="${tx}" y="${axisY + 16}" text-anchor="middle" font-size="9" fill="#555">${+t.toFixed(6)}</text>`);
  }
  out.push(`<text x="${LABEL_W + plotW / 2}" y="${axisY + 30}" text-anchor="middle" font-size="10" fill="#333">time since first event (ms)</text>`);
  const title = `<text x="4" y="14" font-size="11" fill="#222">${escapeXml(data.title || "engine timeline")}${critical.size ? ' — <tspan fill="#d62728">red line: critical path</tspan>' : ""}</text>`;
  const defs = '<defs><pattern id="mxnb-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="1.5"/></pattern><marker id="mxnb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>';
  return `<svg xmlns="http://www.w3.org/2000/svg" class="mxnb-timeline" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica,sans-serif">${defs}${title}<g class="mxnb-lanes">${out.join("")}</g></svg>`;
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

  let timelineTips = {};
  let drawnWidth = 0; // the frame's width the timeline was laid out for

  function draw() {
    const data = model.get("timeline");
    timelineTips = {};
    if (data && data.lanes) {
      drawnWidth = frame.clientWidth || el.clientWidth || 0;
      frame.innerHTML = renderTimeline(data, Math.max(drawnWidth - 2, 400), timelineTips);
    } else {
      frame.innerHTML = model.get("svg") || "";
    }
    const svg = svgElement();
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
      svg.style.minWidth = width ? `${Math.round(width * MIN_SCALE)}px` : "";
      svg.style.height = "auto";
      box = baseBox ? baseBox.slice() : null;
      applyBox();
    }
    takeAnchorTitles();
    markSelected();
  }

  function markSelected() {
    for (const name of ["mxnb-selected", "mxnb-related"]) {
      frame.querySelectorAll(`.${name}`).forEach((n) => n.classList.remove(name));
    }
    const id = model.get("selected");
    if (!id) return;
    const node = frame.querySelector(`[id="${CSS.escape(id)}"]`);
    if (node) node.classList.add("mxnb-selected");
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
    let text = node ? tips[node.id] || timelineTips[node.id] || anchorTips[node.id] : null;
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
      const origin = root.getBoundingClientRect();
      tip.style.left = `${event.clientX - origin.left + 14}px`;
      tip.style.top = `${event.clientY - origin.top + 14}px`;
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
      const width = box[2] * factor;
      const height = box[3] * factor;
      box = [box[0] + (box[2] - width) * fx, box[1] + (box[3] - height) * fy, width, height];
      applyBox();
    },
    { passive: false }
  );

  frame.addEventListener("mousedown", (event) => {
    if (!box || clickableTarget(event.target, frame)) return;
    drag = { cx: event.clientX, cy: event.clientY, x0: box[0], y0: box[1] };
  });
  frame.addEventListener("mouseup", () => {
    drag = null;
  });
  frame.addEventListener("dblclick", () => {
    if (baseBox) {
      box = baseBox.slice();
      applyBox();
    }
  });

  // a timeline is laid out for the frame's width: draw it again when that changes much
  const resized = new ResizeObserver(() => {
    const width = frame.clientWidth;
    const data = model.get("timeline");
    if (data && data.lanes && width && Math.abs(width - drawnWidth) > 0.1 * drawnWidth) draw();
  });
  resized.observe(frame);
  model.on("change:svg", draw);
  model.on("change:timeline", draw);
  model.on("change:selected", markSelected);
  model.on("change:groups", markSelected);
  draw();
  return () => {
    resized.disconnect();
    model.off("change:svg", draw);
    model.off("change:timeline", draw);
    model.off("change:selected", markSelected);
    model.off("change:groups", markSelected);
  };
}

export default { render };
export { render };
