// canvas.js (the SvgCanvas front end) in real headless Chromium, driven by real mouse events.
//
//   node --test-reporter=tap canvas.test.mjs FIXTURES.json
//
// FIXTURES.json is written by tests/widgets/test_canvas_js.py: SVG the Python views really
// emit (graphviz DAG, the op/var DAG, the matplotlib timeline) and the ids drawn in them.
// A small HTTP server on 127.0.0.1 serves harness.html and mxnb/widgets/static/; the page
// mounts the widget on a fake anywidget model and the tests assert on the DOM and the model.
// Needs Debian's chromium (/usr/bin/chromium, or CHROMIUM) and `npm ci` here: `make setup`.
// playwright-core is pinned at 1.61.1, the last release that still runs on node 18, which is
// what `make setup` installs from Debian 12 when node is missing. playwright.launch() starts
// Chromium with a fresh temporary profile (user-data-dir) each run.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const STATIC = path.resolve(HERE, "../../../mxnb/widgets/static");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const ZOOM = 1.15; // canvas.js: one wheel step scales the viewBox by this
const TIP_OFFSET = 14; // canvas.js: the tooltip sits this many px right of and below the pointer

if (!process.argv[2]) throw new Error("usage: node canvas.test.mjs FIXTURES.json");
const fixtures = JSON.parse(await readFile(process.argv[2], "utf8"));

let chromium;
try {
  ({ chromium } = await import("playwright-core"));
} catch (error) {
  throw new Error(`playwright-core is not installed in ${HERE}: run \`make setup\` (${error.message})`);
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

function serve() {
  const server = http.createServer(async (request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    const file = url.pathname.startsWith("/static/")
      ? path.join(STATIC, path.basename(url.pathname))
      : path.join(HERE, "harness.html");
    try {
      const body = await readFile(file);
      response.writeHead(200, { "content-type": TYPES[path.extname(file)] || "text/plain" });
      response.end(body);
    } catch {
      response.writeHead(404);
      response.end();
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

let server;
let browser;
let page;

async function mount(traits) {
  assert.equal(await page.evaluate((t) => window.mount(t), traits), "function");
}

const model = {
  state: () => page.evaluate(() => ({ ...window.canvas.model.state })),
  calls: () => page.evaluate(() => window.canvas.model.calls),
  remote: (name, value) => page.evaluate(([n, v]) => window.canvas.model.remote(n, v), [name, value]),
  listenerCount: (event) =>
    page.evaluate((e) => (window.canvas.model.listeners.get(e) || []).length, event),
};

/** The widget's viewBox as numbers [x, y, width, height] (null when it has none). */
async function viewBox() {
  return page.evaluate(() => {
    const box = document.querySelector(".mxnb-canvas svg").getAttribute("viewBox");
    return box === null ? null : box.split(/[\s,]+/).map(Number);
  });
}

/** The drawn SVG's box on the page. */
async function svgRect() {
  return page.evaluate(() => {
    const r = document.querySelector(".mxnb-canvas svg").getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };
  });
}

/**
 * A whole-pixel point where the first element matching `selector` inside the canvas is what
 * the pointer hits (the topmost element there), nearest its centre. A shape's box on the page
 * is larger than its fill (Chromium adds room for the stroke), so its centre may miss it.
 */
async function pointOn(selector) {
  const point = await page.evaluate((sel) => {
    const element = document.querySelector(`.mxnb-canvas ${sel}`);
    if (!element) return null;
    const r = element.getBoundingClientRect();
    const points = [];
    for (let x = Math.ceil(r.left); x <= r.right; x += 1) {
      for (let y = Math.ceil(r.top); y <= r.bottom; y += 1) points.push([x, y]);
    }
    const cx = r.left + r.width / 2;
    const cy = r.top + r.height / 2;
    points.sort((a, b) => Math.hypot(a[0] - cx, a[1] - cy) - Math.hypot(b[0] - cx, b[1] - cy));
    const hit = points.find(([x, y]) => element.contains(document.elementFromPoint(x, y)));
    return hit ? { x: hit[0], y: hit[1] } : null;
  }, selector);
  assert.ok(point, `${selector} is drawn and can be pointed at`);
  return point;
}

/** A point on the SVG's background: just inside its top-left corner. */
async function background() {
  const rect = await svgRect();
  return { x: Math.ceil(rect.left) + 3, y: Math.ceil(rect.top) + 3 };
}

async function lastTarget(type) {
  const targets = await page.evaluate(() => window.targets);
  return targets.filter((t) => t.type === type).at(-1);
}

async function tooltip() {
  return page.evaluate(() => {
    const tip = document.querySelector(".mxnb-tooltip");
    const r = tip.getBoundingClientRect();
    return { display: getComputedStyle(tip).display, text: tip.textContent, left: r.left, top: r.top };
  });
}

async function selectedIds() {
  return page.evaluate(() =>
    [...document.querySelectorAll(".mxnb-canvas .mxnb-selected")].map((n) => n.id),
  );
}

/** |actual - expected| <= tolerance (absolute; viewBox numbers are a few hundred units). */
function assertClose(actual, expected, message, tolerance = 1e-6) {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${message}: ${actual} != ${expected}`);
}

function assertBoxClose(actual, expected, message, tolerance = 1e-6) {
  assert.equal(actual.length, 4, message);
  actual.forEach((value, i) => assertClose(value, expected[i], `${message} [${i}]`, tolerance));
}

/** The viewBox the SVG text carries, parsed by the browser (not by the widget). */
async function viewBoxOf(svgText) {
  return page.evaluate((text) => {
    const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
    return svg.getAttribute("viewBox").split(/[\s,]+/).map(Number);
  }, svgText);
}

before(async () => {
  server = await serve();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
  });
  page = await browser.newPage({ viewport: { width: 800, height: 700 } });
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.harnessReady === true);
});

after(async () => {
  await browser?.close();
  server?.close();
});

describe("drawing", () => {
  it("inserts the SVG, drops its width/height and keeps its viewBox", async () => {
    await mount({ svg: fixtures.dag });
    const drawn = await page.evaluate(() => {
      const svgs = document.querySelectorAll("#host .mxnb-canvas svg");
      const svg = svgs[0];
      return {
        count: svgs.length,
        width: svg.getAttribute("width"),
        height: svg.getAttribute("height"),
        renderedWidth: svg.getBoundingClientRect().width,
        frameWidth: document.querySelector(".mxnb-canvas").clientWidth,
        naturalWidth: Number(svg.style.width.replace("px", "")),
        tooltips: document.querySelectorAll("#host .mxnb-tooltip").length,
      };
    });
    assert.equal(drawn.count, 1);
    assert.equal(drawn.width, null);
    assert.equal(drawn.height, null);
    assert.equal(drawn.tooltips, 1);
    // a small graph keeps its natural size: it is not blown up to the frame's width
    const points = Number(/<svg[^>]*\swidth="([\d.]+)pt"/.exec(fixtures.dag)[1]);
    assertClose(drawn.naturalWidth, (points * 96) / 72, "natural width in px", 0.01);
    assert.ok(drawn.naturalWidth < drawn.frameWidth, "the fixture is narrower than the frame");
    assertClose(drawn.renderedWidth, drawn.naturalWidth, "drawn at its natural width", 0.5);
    assert.deepEqual(await viewBox(), await viewBoxOf(fixtures.dag));
    for (const id of fixtures.op_ids) {
      assert.equal(await page.locator(`.mxnb-canvas [id="${id}"]`).count(), 1, `${id} drawn once`);
    }
  });

  it("sets the viewBox from width/height in px when the SVG has none", async () => {
    await mount({
      svg: '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="150"><rect id="op7" width="50" height="20"/></svg>',
    });
    assert.deepEqual(await viewBox(), [0, 0, 300, 150]);
    const attributes = await page.evaluate(() => {
      const svg = document.querySelector(".mxnb-canvas svg");
      return [svg.getAttribute("width"), svg.getAttribute("height")];
    });
    assert.deepEqual(attributes, [null, null]);
  });

  it("sets the viewBox from width/height in pt (graphviz's unit) converted to px", async () => {
    const noViewBox = fixtures.dag.replace(/\s+viewBox="[^"]*"/, "");
    assert.notEqual(noViewBox, fixtures.dag);
    const points = (name) => Number(new RegExp(`<svg[^>]*\\s${name}="([\\d.]+)pt"`).exec(fixtures.dag)[1]);
    await mount({ svg: noViewBox });
    // SVG lengths are single precision in the browser: equal to about 1e-5
    const expected = [0, 0, (points("width") * 96) / 72, (points("height") * 96) / 72];
    assertBoxClose(await viewBox(), expected, "viewBox", 1e-3);
  });

  it("shrinks a wide drawing to the frame, but not below half size: then the frame scrolls", async () => {
    const wide = (width) =>
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="100"><rect id="op1" width="50" height="20"/></svg>`;
    const measure = () =>
      page.evaluate(() => {
        const frame = document.querySelector(".mxnb-canvas");
        return { svg: frame.querySelector("svg").getBoundingClientRect().width, frame: frame.clientWidth, scroll: frame.scrollWidth };
      });
    await mount({ svg: wide(900) });
    let size = await measure();
    assertClose(size.svg, size.frame, "900 px fits the 600 px frame", 0.5);
    assert.equal(size.scroll, size.frame, "no scrolling");
    await mount({ svg: wide(3000) });
    size = await measure();
    assertClose(size.svg, 1500, "3000 px drawn at half size", 0.5);
    assert.ok(size.scroll > size.frame, "the frame scrolls sideways");
  });

  it("shrinks a 40-op DAG no further than its smallest text at 10 px: then the frame scrolls", async () => {
    const measure = () =>
      page.evaluate(() => {
        const frame = document.querySelector(".mxnb-canvas");
        const svg = frame.querySelector("svg");
        const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width; // px per unit
        const sizes = [...svg.querySelectorAll("text")].map((t) => Number(t.getAttribute("font-size")) * scale);
        return { least: Math.min(...sizes), frame: frame.clientWidth, scroll: frame.scrollWidth, edges: frame.querySelectorAll("g.edge").length };
      });
    // every dependency drawn: wider than the frame, so the text would shrink below 10 px
    await mount({ svg: fixtures.wide_dag.tangle });
    let drawn = await measure();
    assert.ok(drawn.least >= 10 - 1e-3, `smallest text drawn at ${drawn.least.toFixed(2)} px`);
    assert.ok(drawn.scroll > drawn.frame, "the frame scrolls sideways instead");
    // the reduced drawing: the chain's edges only, and it fits
    await mount({ svg: fixtures.wide_dag.svg });
    drawn = await measure();
    assert.equal(drawn.edges, fixtures.wide_dag.edges, "the edges the reduction kept are drawn");
    assert.ok(drawn.least >= 10 - 1e-3, `smallest text drawn at ${drawn.least.toFixed(2)} px`);
    assert.equal(drawn.scroll, drawn.frame, "no sideways scrolling");
  });

  it("draws nothing and fails nowhere when svg is empty", async () => {
    await mount({ svg: "" });
    const frame = await page.evaluate(() => document.querySelector(".mxnb-canvas").innerHTML);
    assert.equal(frame, "");
  });
});

describe("clicks", () => {
  beforeEach(async () => {
    await mount({ svg: fixtures.dag, clicks: 3 });
  });

  it("a click on an op node's label text selects the op, counts the click, saves once", async () => {
    const op = fixtures.op_ids[1];
    const point = await pointOn(`[id="${op}"] text`);
    await page.mouse.click(point.x, point.y);
    const target = await lastTarget("click");
    assert.equal(target.tag, "text", "the click landed on the <text> inside the node");
    const state = await model.state();
    assert.equal(state.selected, op);
    assert.equal(state.clicks, 4);
    const calls = (await model.calls()).filter((c) => c[0] !== "on");
    assert.deepEqual(calls, [["set", "selected", op], ["set", "clicks", 4], ["save_changes"]]);
  });

  it("a click on an op node's box (the path inside <a> inside the node) selects it", async () => {
    const op = fixtures.op_ids[0];
    const point = await pointOn(`[id="${op}"] path`);
    await page.mouse.click(point.x, point.y);
    assert.equal((await lastTarget("click")).tag, "path");
    const state = await model.state();
    assert.equal(state.selected, op);
    assert.equal(state.clicks, 4);
  });

  it("every click counts, also a second one on the same node", async () => {
    const op = fixtures.op_ids[1];
    const point = await pointOn(`[id="${op}"] text`);
    await page.mouse.click(point.x, point.y);
    const corner = await background();
    await page.mouse.click(corner.x, corner.y); // the background, between the two clicks
    await page.mouse.click(point.x, point.y);
    const state = await model.state();
    assert.equal(state.selected, op);
    assert.equal(state.clicks, 5);
    assert.equal((await model.calls()).filter((c) => c[0] === "save_changes").length, 2);
  });

  it("a click on an edge label or the background changes nothing", async () => {
    const label = await pointOn(".edge text");
    await page.mouse.click(label.x, label.y);
    const target = await lastTarget("click");
    assert.equal(target.tag, "text");
    assert.match(target.parentId, /^edge\d+$/);
    const corner = await background();
    await page.mouse.click(corner.x, corner.y);
    assert.equal((await lastTarget("click")).tag, "polygon");
    const state = await model.state();
    assert.equal(state.selected, "");
    assert.equal(state.clicks, 3);
    assert.deepEqual((await model.calls()).filter((c) => c[0] !== "on"), []);
  });

  it("a click on a var node's ellipse selects the var node", async () => {
    await mount({ svg: fixtures.vars });
    const id = fixtures.var_ids[0];
    const point = await pointOn(`[id="${id}"] ellipse`);
    await page.mouse.click(point.x, point.y);
    assert.equal((await lastTarget("click")).tag, "ellipse");
    assert.equal((await model.state()).selected, id);
  });

  it("a click on a timeline bar (matplotlib gid) selects its op", async () => {
    await mount({ svg: fixtures.timeline });
    const op = fixtures.op_ids[1];
    const point = await pointOn(`[id="${op}"] path`);
    await page.mouse.click(point.x, point.y);
    assert.equal((await model.state()).selected, op);
  });

  it("only ids op<N>, entry-<name> and var<N>_<k> are clickable", async () => {
    const ids = ["op7", "entry-fc1_output", "var3_1", "op", "opx1", "op7a", "var3", "entry-", "graph0"];
    const clickable = new Set(["op7", "entry-fc1_output", "var3_1"]);
    const rects = ids.map((id, i) => `<rect id="${id}" x="${i * 40}" y="0" width="30" height="30"/>`);
    await mount({
      svg: `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 360 30">${rects.join("")}</svg>`,
    });
    let clicks = 0;
    for (const id of ids) {
      const point = await pointOn(`[id="${id}"]`);
      await page.mouse.click(point.x, point.y);
      const state = await model.state();
      if (clickable.has(id)) clicks += 1;
      assert.equal(state.clicks, clicks, `clicks after ${id}`);
      assert.equal(state.selected === id, clickable.has(id), `selected after ${id}`);
    }
  });
});

describe("selection mark", () => {
  it("marks the selected element when drawn, and moves the mark when selected changes", async () => {
    const [first, second] = fixtures.op_ids;
    await mount({ svg: fixtures.dag, selected: first });
    assert.deepEqual(await selectedIds(), [first]);
    await model.remote("selected", second);
    assert.deepEqual(await selectedIds(), [second]);
    // canvas.css draws the mark: the node's outline turns red and thick
    const stroke = await page.evaluate((id) => {
      const style = getComputedStyle(document.querySelector(`.mxnb-canvas [id="${id}"] path`));
      return [style.stroke, style.strokeWidth];
    }, second);
    assert.deepEqual(stroke, ["rgb(214, 39, 40)", "3px"]);
    await model.remote("selected", "");
    assert.deepEqual(await selectedIds(), []);
    await model.remote("selected", "op999999");
    assert.deepEqual(await selectedIds(), [], "an id not drawn marks nothing");
  });

  it("a click marks the clicked node (the model's change:selected)", async () => {
    await mount({ svg: fixtures.dag, selected: fixtures.op_ids[0] });
    const op = fixtures.op_ids[2];
    const point = await pointOn(`[id="${op}"] text`);
    await page.mouse.click(point.x, point.y);
    assert.deepEqual(await selectedIds(), [op]);
  });

  it("marks the elements sharing the selected one's group (groups trait), orange", async () => {
    const [a, b, c, d] = fixtures.op_ids;
    await mount({ svg: fixtures.dag, groups: { [a]: 0, [b]: 1, [c]: 0, [d]: 1 } });
    const related = () =>
      page.evaluate(() => [...document.querySelectorAll(".mxnb-canvas .mxnb-related")].map((n) => n.id));
    const point = await pointOn(`[id="${a}"] text`);
    await page.mouse.click(point.x, point.y);
    assert.deepEqual(await selectedIds(), [a]);
    assert.deepEqual(await related(), [c]);
    const stroke = await page.evaluate((id) => getComputedStyle(document.querySelector(`.mxnb-canvas [id="${id}"] path`)).stroke, c);
    assert.equal(stroke, "rgb(255, 127, 14)");
    await model.remote("selected", d);
    assert.deepEqual(await related(), [b]);
    await model.remote("groups", {});
    assert.deepEqual(await related(), []);
  });
});

describe("tooltips", () => {
  it("shows the tooltips text next to the pointer, else the node's graphviz tooltip, else nothing", async () => {
    const [withTip, withoutTip] = fixtures.op_ids;
    const tips = { [withTip]: "#12 fc1\nworker cpu(0)/1" };
    await mount({ svg: fixtures.dag, tooltips: tips });
    assert.equal((await tooltip()).display, "none");

    const point = await pointOn(`[id="${withTip}"] text`);
    await page.mouse.move(point.x, point.y);
    let tip = await tooltip();
    assert.equal(tip.display, "block");
    assert.equal(tip.text, tips[withTip]);
    assertClose(tip.left, point.x + TIP_OFFSET, "tooltip left (page px)", 1.5);
    assertClose(tip.top, point.y + TIP_OFFSET, "tooltip top (page px)", 1.5);

    const other = await pointOn(`[id="${withoutTip}"] text`);
    await page.mouse.move(other.x, other.y);
    tip = await tooltip();
    assert.equal(tip.display, "block");
    assert.equal(tip.text, fixtures.dag_tips[withoutTip]); // the DAG's tooltip= text, not the id

    const corner = await background();
    await page.mouse.move(corner.x, corner.y);
    assert.equal((await tooltip()).display, "none");

    await page.mouse.move(point.x, point.y);
    assert.equal((await tooltip()).display, "block");
    await page.mouse.move(790, 690); // off the widget: mouseleave
    assert.equal((await tooltip()).display, "none");
  });
});

describe("tooltips taken from the views", () => {
  it("takes a graphviz node's <a xlink:title> over, so the browser shows no second tooltip", async () => {
    assert.match(fixtures.dag, /xlink:title=/);
    await mount({ svg: fixtures.dag });
    const left = await page.evaluate((xlink) => {
      const anchors = [...document.querySelectorAll(".mxnb-canvas a")];
      return anchors.filter((a) => a.getAttributeNS(xlink, "title") || a.getAttribute("xlink:title")).length;
    }, "http://www.w3.org/1999/xlink");
    assert.equal(left, 0);
    for (const op of fixtures.op_ids) {
      const point = await pointOn(`[id="${op}"] text`);
      await page.mouse.move(point.x, point.y);
      assert.equal((await tooltip()).text, fixtures.dag_tips[op]);
    }
  });

  it("falls back to the node's <title> where a node has no tooltip (var nodes)", async () => {
    await mount({ svg: fixtures.vars });
    const id = fixtures.var_ids[0];
    const point = await pointOn(`[id="${id}"] ellipse`);
    await page.mouse.move(point.x, point.y);
    const title = await page.evaluate(
      (v) => document.querySelector(`.mxnb-canvas [id="${v}"] > title`).textContent,
      id,
    );
    const tip = await tooltip();
    assert.equal(tip.display, "block");
    assert.equal(tip.text, title);
  });

  it("shows the timeline's tooltips on its bars (matplotlib SVG has no titles)", async () => {
    await mount({ svg: fixtures.timeline, tooltips: fixtures.timeline_tips });
    const op = fixtures.op_ids[1];
    const point = await pointOn(`[id="${op}"] path`);
    await page.mouse.move(point.x, point.y);
    const tip = await tooltip();
    assert.equal(tip.display, "block");
    assert.equal(tip.text, fixtures.timeline_tips[op]);
  });
});

describe("zoom and pan", () => {
  beforeEach(async () => {
    await mount({ svg: fixtures.dag });
    await page.mouse.move(1, 1);
  });

  /** One wheel notch at `point`; resolves when the widget has handled it. */
  async function wheel(point, deltaX, deltaY) {
    await page.evaluate(() => {
      window.lastWheelCancelled = undefined;
    });
    await page.mouse.move(point.x, point.y);
    await page.mouse.wheel(deltaX, deltaY);
    await page.waitForFunction(() => window.lastWheelCancelled !== undefined);
  }

  /** The SVG user-space point under page point `p`, for a viewBox `box`. */
  function userPoint(p, box, rect) {
    return [box[0] + ((p.x - rect.left) / rect.width) * box[2], box[1] + ((p.y - rect.top) / rect.height) * box[3]];
  }

  it("wheel up zooms in around the pointer, wheel down zooms back out, without scrolling", async () => {
    const base = await viewBox();
    const rect = await svgRect();
    const point = await pointOn(`[id="${fixtures.op_ids[1]}"] text`);

    await wheel(point, 0, -100);
    assert.equal(await page.evaluate(() => window.lastWheelCancelled), true, "the page does not scroll");
    const zoomed = await viewBox();
    assertClose(zoomed[2], base[2] / ZOOM, "width");
    assertClose(zoomed[3], base[3] / ZOOM, "height");
    const before = userPoint(point, base, rect);
    const after = userPoint(point, zoomed, await svgRect());
    assertClose(after[0], before[0], "the point under the pointer stays (x)", 1e-4);
    assertClose(after[1], before[1], "the point under the pointer stays (y)", 1e-4);

    await wheel(point, 0, 100);
    assertBoxClose(await viewBox(), base, "zoomed back out");
    assert.equal(await page.evaluate(() => window.scrollY), 0);
  });

  it("a horizontal wheel (deltaY 0) does not zoom", async () => {
    const base = await viewBox();
    await wheel(await pointOn(`[id="${fixtures.op_ids[1]}"] text`), 80, 0);
    assert.deepEqual(await viewBox(), base);
  });

  it("double-click restores the original viewBox", async () => {
    const base = await viewBox();
    const point = await pointOn(`[id="${fixtures.op_ids[0]}"] text`);
    await wheel(point, 0, -100);
    await wheel(point, 0, -100);
    assert.notDeepEqual(await viewBox(), base);
    const corner = await background();
    await page.mouse.dblclick(corner.x, corner.y);
    assert.deepEqual(await viewBox(), base);
  });

  it("dragging the background pans the view by the pointer's travel", async () => {
    const point = await pointOn(`[id="${fixtures.op_ids[1]}"] text`);
    await wheel(point, 0, -100); // zoomed in, so there is somewhere to pan to
    const start = await viewBox();
    const rect = await svgRect();
    const scale = start[2] / rect.width; // user units per page pixel
    const from = await background();
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(from.x + 40, from.y + 30, { steps: 4 });
    await page.mouse.up();
    const panned = await viewBox();
    assertBoxClose(panned, [start[0] - 40 * scale, start[1] - 30 * scale, start[2], start[3]], "panned");
    // the drag is over: moving on does not pan further
    await page.mouse.move(from.x + 80, from.y + 60);
    assert.deepEqual(await viewBox(), panned);
    const state = await model.state();
    assert.equal(state.clicks, 0, "a drag is not a click on a node");
  });

  it("dragging from a node does not pan", async () => {
    const base = await viewBox();
    const point = await pointOn(`[id="${fixtures.op_ids[1]}"] text`);
    await page.mouse.move(point.x, point.y);
    await page.mouse.down();
    await page.mouse.move(point.x + 200, point.y + 150, { steps: 4 });
    await page.mouse.up();
    assert.deepEqual(await viewBox(), base);
  });
});

describe("zoom that keeps what a reader needs in view (issue 39 item 5)", () => {
  async function wheelAt(point, deltaY) {
    await page.evaluate(() => {
      window.lastWheelCancelled = undefined;
    });
    await page.mouse.move(point.x, point.y);
    await page.mouse.wheel(0, deltaY);
    await page.waitForFunction(() => window.lastWheelCancelled !== undefined);
  }

  const timelineState = () =>
    page.evaluate(() => {
      const svg = document.querySelector(".mxnb-canvas svg");
      const lanes = [...svg.querySelectorAll("g.mxnb-lanes > text")].map((t) => {
        const r = t.getBoundingClientRect();
        return `${t.textContent}@${Math.round(r.left)},${Math.round(r.top)}`;
      });
      const ticks = [...svg.querySelectorAll("g.mxnb-axis text")].map((t) => t.textContent);
      return { viewBox: svg.getAttribute("viewBox"), span: svg.dataset.span, lanes, ticks };
    });

  it("the wheel zooms a timeline's time axis only: lane names stay put, the axis is labelled again", async () => {
    await mount({ timeline: fixtures.timeline_data });
    const before = await timelineState();
    const rect = await svgRect();
    await wheelAt({ x: Math.round(rect.left + rect.width * 0.6), y: Math.round(rect.top + 40) }, -300);
    const after = await timelineState();
    assert.equal(after.viewBox, before.viewBox, "the drawing is not scaled");
    assert.deepEqual(after.lanes, before.lanes, "lane names drawn where they were");
    assert.ok(after.lanes.length >= 2);
    const [t0, t1] = before.span.split(" ").map(Number);
    const [z0, z1] = after.span.split(" ").map(Number);
    assertClose(z1 - z0, (t1 - t0) / ZOOM, "one wheel step narrows the time span", 1e-6);
    assert.notDeepEqual(after.ticks, before.ticks, "the axis ticks are labelled again");
    // bars outside the new span are clipped to the plot: none covers the lane names
    const clipped = await page.evaluate(() => document.querySelector(".mxnb-canvas g.mxnb-clipped").getAttribute("clip-path"));
    assert.match(clipped, /^url\(#mxnb-clip-\d+\)$/);
    const corner = await background();
    await page.mouse.dblclick(corner.x, corner.y);
    assert.equal((await timelineState()).span, before.span, "double-click: the whole span again");
  });

  it("zooming a DAG out past the whole drawing shrinks its box too, and zooming in grows it back", async () => {
    await mount({ svg: fixtures.dag });
    const base = await viewBox();
    const width = (await svgRect()).width;
    const point = await pointOn(`[id="${fixtures.op_ids[1]}"] text`);
    await wheelAt(point, 100);
    await wheelAt(point, 100);
    assert.deepEqual(await viewBox(), base, "the whole drawing, not a small one in an empty box");
    assertClose((await svgRect()).width, width / ZOOM / ZOOM, "the box shrank with it", 0.5);
    for (let step = 0; step < 2; step += 1) {
      const small = await svgRect(); // the pointer on what is left of the drawing
      await wheelAt({ x: Math.round(small.left + small.width / 2), y: Math.round(small.top + small.height / 2) }, -100);
    }
    assertClose((await svgRect()).width, width, "grown back", 0.5);
    assert.deepEqual(await viewBox(), base);
    await wheelAt(point, 100); // out again, then a double-click: its own size
    const corner = await background();
    await page.mouse.dblclick(corner.x, corner.y);
    assertClose((await svgRect()).width, width, "double-click: its own size", 0.5);
  });

  it("a tooltip near the right edge opens left of the pointer, inside the widget", async () => {
    await mount({ timeline: fixtures.timeline_data });
    const rect = await svgRect();
    const last = fixtures.op_ids[fixtures.op_ids.length - 1];
    await page.mouse.move(Math.round(rect.left + rect.width - 2), Math.round(rect.top + 40)); // the far right
    const point = await pointOn(`rect[id="${last}"]`);
    await page.mouse.move(point.x, point.y);
    const box = await page.evaluate(() => {
      const tip = document.querySelector(".mxnb-tooltip").getBoundingClientRect();
      const root = document.querySelector(".mxnb-canvas-root").getBoundingClientRect();
      return { tipRight: tip.right, rootRight: root.right, shown: tip.width > 0 };
    });
    assert.ok(box.shown);
    assert.ok(box.tipRight <= box.rootRight + 0.5, `tooltip ends at ${box.tipRight}, the widget at ${box.rootRight}`);
  });
});

describe("lineage (links trait)", () => {
  const marked = (name) =>
    page.evaluate((n) => [...document.querySelectorAll(`.mxnb-canvas .${n}`)].map((e) => e.id).sort(), name);

  for (const [view, traits] of [
    ["the DAG", () => ({ svg: fixtures.dag, links: fixtures.links })],
    ["the timeline", () => ({ timeline: fixtures.timeline_data, links: fixtures.links })],
  ]) {
    it(`a click on an op in ${view} marks its ancestors and descendants across lanes`, async () => {
      await mount(traits());
      const point = await pointOn(view === "the DAG" ? '[id="op12"] text' : 'rect[id="op12"]');
      await page.mouse.click(point.x, point.y);
      assert.deepEqual(await selectedIds(), ["op12"]);
      assert.deepEqual(await marked("mxnb-ancestor"), ["op11"]);
      assert.deepEqual(await marked("mxnb-descendant"), ["op13", "op14"]);
      await model.remote("selected", "op11");
      assert.deepEqual(await marked("mxnb-ancestor"), []);
      assert.deepEqual(await marked("mxnb-descendant"), ["op12", "op13", "op14"]);
      await model.remote("links", {});
      assert.deepEqual(await marked("mxnb-descendant"), [], "no links: no lineage");
    });
  }

  it("a live view's lineage trait marks the op the kernel computed it for", async () => {
    await mount({ timeline: fixtures.timeline_data, selected: "op13" });
    await model.remote("lineage", { op: "op13", ancestors: ["op11", "op12"], descendants: [] });
    assert.deepEqual(await marked("mxnb-ancestor"), ["op11", "op12"]);
    await model.remote("selected", "op14");
    assert.deepEqual(await marked("mxnb-ancestor"), [], "another op's lineage is not shown");
  });
});

describe("idle spans on the timeline", () => {
  it("draws each idle span under its lane, coloured by reason, hovering with its var and op", async () => {
    await mount({ timeline: fixtures.timeline_data });
    const spans = await page.evaluate(() =>
      [...document.querySelectorAll(".mxnb-canvas rect.mxnb-idle-span")].map((r) => [r.id, r.getAttribute("fill")]),
    );
    assert.equal(spans.length, fixtures.timeline_data.idle.length);
    const colours = { nothing_pushed: "#bab0ac", waiting_on_var: "#e15759", ready_not_started: "#edc948" };
    spans.forEach(([id, fill]) => assert.equal(fill, colours[fixtures.timeline_data.idle[Number(id.slice(4))][3]]));
    const index = fixtures.timeline_data.idle.findIndex((span) => span[3] === "waiting_on_var");
    const point = await pointOn(`rect[id="idle${index}"]`);
    await page.mouse.move(point.x, point.y);
    const tip = await page.evaluate(() => document.querySelector(".mxnb-tooltip").textContent);
    assert.equal(tip, fixtures.timeline_data.idle[index][4]);
    assert.match(tip, /waiting on var '\w+', held by op #\d+ \w+/);
  });
});

describe("a live timeline's idle spans (msg:custom timeline_idle)", () => {
  it("draws a quiet run's idle spans for the drawing they belong to, until the next delta", async () => {
    const data = { ...fixtures.timeline_data, idle: [], seq: 5 };
    const spans = fixtures.timeline_data.idle;
    await mount({ timeline: data });
    const count = () => page.evaluate(() => document.querySelectorAll(".mxnb-canvas rect.mxnb-idle-span").length);
    assert.equal(await count(), 0);
    await page.evaluate((m) => window.canvas.model.custom(m), { timeline_idle: { seq: 4, spans } });
    assert.equal(await count(), 0, "spans of another drawing are not drawn");
    await page.evaluate((m) => window.canvas.model.custom(m), { timeline_idle: { seq: 5, spans } });
    assert.equal(await count(), spans.length);
    const delta = { seq: 6, base: 5, title: data.title, span: data.span, critical: [data.critical.length, []], bars: {} };
    await page.evaluate((m) => window.canvas.model.custom(m), { timeline_delta: delta });
    assert.equal(await count(), 0, "a delta makes them stale");
  });
});

describe("marks on the timeline (a trace diff's largest changes)", () => {
  it("outlines each marked op's block in its colour and adds the label to its hover", async () => {
    const marks = [[12, "#d62728", "+5.000 ms"], [14, "#2ca02c", "-1.000 ms"], [999, "#d62728", "not drawn"]];
    await mount({ timeline: { ...fixtures.timeline_data, marks } });
    const drawn = await page.evaluate(() =>
      [...document.querySelectorAll(".mxnb-canvas rect.mxnb-mark")].map((r) => [r.dataset.op, r.getAttribute("stroke")]),
    );
    assert.deepEqual(drawn, [["12", "#d62728"], ["14", "#2ca02c"]]);
    const point = await pointOn('rect[id="op12"]');
    await page.mouse.move(point.x, point.y);
    const tip = await page.evaluate(() => document.querySelector(".mxnb-tooltip").textContent);
    assert.match(tip, /^#12 fc1 .* \| \+5\.000 ms$/);
  });
});

describe("timeline drawn in the browser (timeline trait)", () => {
  const barCount = () => page.evaluate(() => document.querySelectorAll(".mxnb-canvas rect.mxnb-bar").length);

  it("draws a bar per op with its id, hover text, dependency arrows and the critical path", async () => {
    await mount({ timeline: fixtures.timeline_data });
    for (const id of fixtures.op_ids) {
      assert.equal(await page.locator(`.mxnb-canvas rect[id="${id}"]`).count(), 1, `${id} drawn once`);
    }
    assert.equal(await barCount(), fixtures.op_ids.length);
    const flows = await page.evaluate(() => document.querySelectorAll(".mxnb-canvas path.mxnb-flow").length);
    assert.equal(flows, fixtures.timeline_data.flows.length);
    assert.ok(flows > 0);
    const critical = await page.evaluate(() => document.querySelectorAll(".mxnb-canvas .mxnb-critical").length);
    assert.equal(critical, fixtures.timeline_data.critical.length);
    const op = fixtures.op_ids[1];
    const point = await pointOn(`rect[id="${op}"]`);
    await page.mouse.move(point.x, point.y);
    const tip = await page.evaluate(() => document.querySelector(".mxnb-tooltip").textContent);
    assert.match(tip, new RegExp(`^#${op.slice(2)} \\w+ \\[done\\] \\| worker cpu\\(0\\)/\\d \\| [\\d.]+ ms$`));
    await page.mouse.click(point.x, point.y);
    assert.equal((await model.state()).selected, op);
  });

  it("writes the names of overlapping bars without writing one over another", async () => {
    // a kvstore lane: requests in flight overlap in time, each long enough for its name
    const bars = Array.from({ length: 12 }, (_, i) => [i, i * 0.4, i * 0.4 + 1.5, i % 2 ? "kvstore.push:b" : "kvstore.pull:w", "done", null]);
    const data = { title: "overlap", span: [0, 6.5], lanes: [{ name: "kvstore", kind: "worker", device: "cpu(0)", bars }], critical: [], flows: [] };
    await mount({ timeline: data });
    const boxes = await page.evaluate(() =>
      [...document.querySelectorAll(".mxnb-canvas .mxnb-labels text")].map((t) => {
        const box = t.getBBox();
        return [box.x, box.x + box.width];
      }));
    assert.ok(boxes.length >= 2, `${boxes.length} names written`);
    boxes.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < boxes.length; i++) {
      assert.ok(boxes[i - 1][1] <= boxes[i][0], `name ${i} starts at ${boxes[i][0]}, inside the one before (ends ${boxes[i - 1][1]})`);
    }
  });

  it("merges thousands of narrow bars into legible blocks, without arrows", async () => {
    const bars = (lane) => Array.from({ length: 1500 }, (_, i) => [2 * i + lane, i * 0.01, i * 0.01 + 0.008, i % 2 ? "add" : "mul", "done", null]);
    const data = {
      title: "dense",
      span: [0, 15],
      lanes: [0, 1].map((lane) => ({ name: `cpu(0)/${lane}`, kind: "worker", device: "cpu(0)", bars: bars(lane) })),
      critical: Array.from({ length: 1500 }, (_, i) => 2 * i),
      flows: Array.from({ length: 2999 }, (_, i) => [i, i + 1, "RAW a"]),
    };
    await mount({ timeline: data });
    const drawn = await barCount();
    assert.ok(drawn > 20 && drawn < 400, `${drawn} blocks for 3000 bars in a 600 px frame`);
    const dense = await page.evaluate(() => document.querySelectorAll(".mxnb-canvas rect.mxnb-dense").length);
    assert.ok(dense > 0.9 * drawn, "nearly every block is a merged one");
    const critical = await page.evaluate(() => document.querySelectorAll(".mxnb-canvas .mxnb-critical").length);
    assert.ok(critical < drawn, "the critical path is a line over its blocks, not an outline of each bar");
    const flows = await page.evaluate(() => document.querySelectorAll(".mxnb-canvas path.mxnb-flow").length);
    assert.equal(flows, 0, "no arrows at this density");
    const point = await pointOn("rect.mxnb-dense");
    await page.mouse.move(point.x, point.y);
    const tip = await page.evaluate(() => document.querySelector(".mxnb-tooltip").textContent);
    assert.match(tip, /^\d+ ops #\d+\.\.#\d+ on cpu\(0\)\/\d: (mul, add|add, mul)$/);
  });
});

describe("live timeline: a full send, then deltas (msg:custom)", () => {
  const stream = fixtures.timeline_stream;
  // what is drawn: every block and red line, with its geometry, and the drawing's counts
  const drawn = () =>
    page.evaluate(() => {
      const svg = document.querySelector(".mxnb-canvas svg.mxnb-timeline");
      const rects = [...svg.querySelectorAll(".mxnb-plot rect")].map((r) =>
        [r.id, r.getAttribute("class"), r.getAttribute("x"), r.getAttribute("y"), r.getAttribute("width")].join(" "));
      return {
        rects: rects.sort(),
        transform: svg.querySelector(".mxnb-plot").getAttribute("transform"),
        axis: svg.querySelector(".mxnb-axis").innerHTML,
        labels: svg.querySelector(".mxnb-labels").innerHTML,
        ops: Number(svg.getAttribute("data-ops")),
        last: Number(svg.getAttribute("data-last-op")),
      };
    });
  const stream_in = (deltas) =>
    page.evaluate((ds) => {
      for (const delta of ds) window.canvas.model.custom({ timeline_delta: delta });
    }, deltas);

  it("draws after every delta what a fresh drawing of the same data draws", async () => {
    await mount({ timeline: stream.full });
    await stream_in(stream.deltas);
    const live = await drawn();
    assert.equal(live.ops, stream.ops, "every op of the run has its bar");
    assert.equal(live.last, stream.ops);
    const dense = live.rects.filter((r) => r.includes("mxnb-dense")).length;
    const alone = live.rects.filter((r) => r.startsWith("op") && !r.includes("mxnb-dense")).length;
    assert.ok(dense > 50 && alone >= 30, `${dense} dense blocks, ${alone} bars drawn alone`);
    assert.ok(live.rects.some((r) => r.includes("mxnb-critical")), "the critical path is drawn");
    const sends = (await model.calls()).filter((c) => c[0] === "send");
    assert.deepEqual(sends, [], "no delta was refused");

    await mount({ timeline: stream.final });
    assert.deepEqual(await drawn(), live);
  });

  it("redraws everything only on a new lane or cell size, not on every delta", async () => {
    await mount({ timeline: stream.full });
    // a whole redraw empties the svg and makes a new plot group; a delta keeps it
    const keep = () => page.evaluate(() => (document.querySelector(".mxnb-plot").dataset.kept = "yes"));
    const kept = () => page.evaluate(() => document.querySelector(".mxnb-plot").dataset.kept === "yes");
    let whole = 0;
    for (const delta of stream.deltas) {
      await keep();
      await stream_in([delta]);
      whole += !(await kept());
    }
    // the cell size doubles each time the range does (~6 times here), and lanes appear once
    assert.ok(whole >= 1 && whole <= 10, `${whole} whole redraws for ${stream.deltas.length} deltas`);
  });

  it("a delta that does not follow the drawing asks Python for everything again (once)", async () => {
    await mount({ timeline: stream.full });
    await stream_in(stream.deltas.slice(1, 3)); // the first one was missed
    const sends = (await model.calls()).filter((c) => c[0] === "send");
    assert.deepEqual(sends, [["send", { timeline_resync: stream.deltas[1].seq }]]);
  });

  it("a view drawn after deltas were sent (timeline_seq ahead of its data) asks for everything", async () => {
    const sends = async () => (await model.calls()).filter((c) => c[0] === "send");
    await mount({ timeline: stream.full, timeline_seq: stream.full.seq + 3 });
    assert.deepEqual(await sends(), [["send", { timeline_resync: stream.full.seq + 3 }]]);
    // the whole timeline and its seq arrive together: nothing more to ask
    await mount({ timeline: stream.full, timeline_seq: stream.full.seq });
    assert.deepEqual(await sends(), []);
    await mount({ timeline: stream.full, timeline_seq: stream.full.seq - 1 }); // an older seq
    assert.deepEqual(await sends(), []);
  });

  it("zoom and double-click reset after deltas: the same bars as a fresh drawing", async () => {
    await mount({ timeline: stream.full });
    await stream_in(stream.deltas);
    const point = await pointOn("svg.mxnb-timeline");
    const inView = () =>
      page.evaluate(() => {
        const frame = document.querySelector(".mxnb-canvas").getBoundingClientRect();
        return [...document.querySelectorAll(".mxnb-canvas rect.mxnb-bar")].filter((r) => {
          const box = r.getBoundingClientRect();
          return box.right > frame.left && box.left < frame.right && box.width > 0;
        }).map((r) => r.id).sort();
      });
    const zoom = async () => {
      await page.mouse.move(point.x, point.y);
      for (let i = 0; i < 4; i += 1) await page.mouse.wheel(0, -100);
      await page.waitForTimeout(50);
    };
    await zoom();
    const live = await inView();
    // a double-click on the drawing (no bar: dispatched on the frame, so nothing is selected):
    // drawn again from scratch, zoom reset
    await page.evaluate(() => document.querySelector(".mxnb-canvas").dispatchEvent(new MouseEvent("dblclick", { bubbles: true })));
    const redrawn = await drawn();
    await zoom();
    assert.deepEqual(await inView(), live);
    await mount({ timeline: stream.final });
    assert.deepEqual(await drawn(), redrawn);
    await zoom();
    assert.deepEqual(await inView(), live);
    assert.ok(live.length > 0);
  });
});

describe("model changes", () => {
  it("change:svg redraws: the new SVG, its own viewBox (zoom reset), the selection re-marked", async () => {
    const op = fixtures.op_ids[1];
    await mount({ svg: fixtures.dag, selected: op });
    await page.mouse.move(300, 200);
    await page.mouse.wheel(0, -100);
    await page.waitForFunction(() => window.lastWheelCancelled !== undefined);

    await model.remote("svg", fixtures.timeline);
    const drawn = await page.evaluate(() => {
      const svgs = document.querySelectorAll(".mxnb-canvas svg");
      return { count: svgs.length, width: svgs[0].getAttribute("width"), graph: !!document.querySelector(".mxnb-canvas #graph0") };
    });
    assert.deepEqual(drawn, { count: 1, width: null, graph: false });
    assert.deepEqual(await viewBox(), await viewBoxOf(fixtures.timeline));
    assert.deepEqual(await selectedIds(), [op]);
  });

  it("registers change:svg, change:selected, change:groups and change:links; the cleanup it returns unregisters them", async () => {
    await mount({ svg: fixtures.dag });
    assert.equal(await model.listenerCount("change:svg"), 1);
    assert.equal(await model.listenerCount("change:selected"), 1);
    await page.evaluate(() => window.canvas.cleanup());
    assert.equal(await model.listenerCount("change:svg"), 0);
    assert.equal(await model.listenerCount("change:selected"), 0);
    const registered = (await model.calls()).filter((c) => c[0] === "on" || c[0] === "off");
    const traits = ["change:groups", "change:lineage", "change:links", "change:selected", "change:svg", "change:timeline", "msg:custom"];
    assert.deepEqual(registered.filter((c) => c[0] === "on").map((c) => c[1]).sort(), traits);
    assert.deepEqual(registered.filter((c) => c[0] === "off").map((c) => c[1]).sort(), traits);

    // after cleanup the model's changes no longer reach the view
    await model.remote("svg", fixtures.timeline);
    await model.remote("selected", fixtures.op_ids[0]);
    assert.deepEqual(await viewBox(), await viewBoxOf(fixtures.dag));
    assert.deepEqual(await selectedIds(), []);
  });
});
