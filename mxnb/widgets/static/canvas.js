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

  function draw() {
    frame.innerHTML = model.get("svg") || "";
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
    let text = node ? tips[node.id] || anchorTips[node.id] : null;
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

  model.on("change:svg", draw);
  model.on("change:selected", markSelected);
  model.on("change:groups", markSelected);
  draw();
  return () => {
    model.off("change:svg", draw);
    model.off("change:selected", markSelected);
    model.off("change:groups", markSelected);
  };
}

export default { render };
