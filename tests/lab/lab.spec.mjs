// mxnb in a real JupyterLab, with Galata (Playwright for JupyterLab) on Debian's Chromium.
//
//   MXNB_LAB_URL=... MXNB_LAB_CONFIG=CONFIG.json npx playwright test   (playwright.config.mjs)
//
// CONFIG.json is written by tests/lab/test_jupyterlab.py, which started the JupyterLab server
// (127.0.0.1, a free port, Galata's helper extension, the app exposed as `window.jupyterapp`)
// with a root holding the notebooks, the panel notebooks, two symbol JSONs and a trace. Galata's
// `page` fixture opens JupyterLab for each test (fresh page, workspace reset, settings mocked)
// in a test folder of its own; the files are in the server's root, opened by path.
// Every test also fails if the browser console said "widget model not found".

import { expect, galata, test as galataTest } from "@jupyterlab/galata";
import { readFileSync } from "node:fs";
import path from "node:path";

const config = JSON.parse(readFileSync(process.env.MXNB_LAB_CONFIG, "utf8"));

const test = galataTest.extend({
  // the browser console's errors, from the first request of the page on (the page fixture
  // loads JupyterLab before the test body runs; the context is there before it)
  consoleErrors: [
    async ({ context }, use) => {
      const errors = [];
      context.on("console", (message) => {
        if (message.type() === "error") errors.push(message.text());
      });
      await use(errors);
      const missing = errors.filter((text) => /widget model not found/i.test(text));
      expect(missing, "no 'widget model not found' in the browser console").toEqual([]);
    },
    { auto: true },
  ],
});

async function shot(page, name) {
  await page.screenshot({ path: path.join(config.artifacts, `${name}.png`) });
}

async function extensionLoaded(page) {
  await page.waitForSelector("#mxnb-engine-sidebar", { state: "attached", timeout: 60_000 });
}

/** Open `name` (a path in the server's root) as a user does from the file browser. */
async function openFile(page, name) {
  await page.evaluate(async (p) => void (await window.jupyterapp.commands.execute("docmanager:open", { path: p })), name);
  await page.waitForFunction((p) => window.jupyterapp.shell.currentWidget?.context?.path === p, name, { timeout: 60_000 });
}

/** Wait until the current notebook's kernel is connected and idle. */
async function kernelIdle(page, timeout = 120_000) {
  await page.waitForFunction(() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
  }, null, { timeout, polling: 250 });
}

/**
 * The value `read()` settles on: more than 12 (the cell's pushes) and the same on two reads
 * 800 ms apart, for the panels stream ops after the cell has finished.
 */
async function settled(read, timeout = 30_000) {
  let value = -1;
  await expect.poll(async () => {
    const first = await read();
    await new Promise((done) => setTimeout(done, 800));
    value = await read();
    return first === value && value > 12;
  }, { timeout, message: "the panel's op count settles above 12" }).toBe(true);
  return value;
}

/**
 * Run cell `index` of the current notebook and wait until the kernel has answered it: its
 * execution count is new and the kernel is idle.  (Waiting for "idle" alone can pass before
 * the request reaches the kernel.)
 */
async function runCell(page, index) {
  const before = await page.evaluate(async (i) => {
    const panel = window.jupyterapp.shell.currentWidget;
    panel.content.activeCellIndex = i;
    const count = panel.content.widgets[i].model.executionCount;
    await window.jupyterapp.commands.execute("notebook:run-cell");
    return { path: panel.context.path, count };
  }, index);
  await page.waitForFunction(({ i, path, count }) => {
    const panel = [...window.jupyterapp.shell.widgets("main")].find((w) => w.context && w.context.path === path);
    const now = panel.content.widgets[i].model.executionCount;
    return now !== null && now !== count;
  }, { i: index, ...before }, { timeout: 120_000, polling: 100 });
  await kernelIdle(page);
}

/** Show the "mxnb engine" sidebar. */
async function openSidebar(page) {
  await page.locator(".jp-SideBar .lm-TabBar-tab[title='mxnb engine'], .jp-SideBar li[title='mxnb engine']").first().click();
}

/** Make the open notebook the main area's current widget again (after a panel took focus). */
async function activateNotebook(page) {
  await page.evaluate(() => {
    const notebook = [...window.jupyterapp.shell.widgets("main")].find((w) => w.context && w.context.path.endsWith(".ipynb"));
    window.jupyterapp.shell.activateById(notebook.id);
  });
}

/** Shut the current notebook's kernel down and close it without the "save?" dialog. */
async function closeNotebook(page) {
  await page.evaluate(async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.sessionContext.shutdown();
    panel.context.model.dirty = false;
    panel.dispose();
  });
}

test.describe("file viewers (no kernel)", () => {
  test.beforeEach(async ({ page }) => {
    await extensionLoaded(page);
    await page.filebrowser.openHomeDirectory(); // the files are in the server's root
  });

  test("a -symbol.json double-clicked in the file browser opens as the network graph", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.symbol }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget .mxnb-panel[data-nodes]");
    await viewer.waitFor({ timeout: 60_000 });
    await expect(viewer).toHaveAttribute("data-nodes", String(config.symbol_nodes));
    const nodes = viewer.locator(".mxnb-canvas svg g.node");
    await nodes.first().waitFor();
    await expect(nodes).toHaveCount(config.symbol_nodes);
    // hover an op node: its attributes show, in the tooltip canvas.css styles (a fresh page,
    // no cell widget loaded the stylesheet: the extension's bundle must carry it)
    await viewer.locator(".mxnb-canvas svg g.node", { hasText: "Convolution" }).first().hover();
    const tooltip = viewer.locator(".mxnb-tooltip");
    expect(await tooltip.textContent()).toMatch(/\(Convolution\)\nkernel = \(5, 5\)/);
    const style = await tooltip.evaluate((el) => {
      const css = getComputedStyle(el);
      return { position: css.position, background: css.backgroundColor, border: css.borderTopColor };
    });
    expect(style, "the tooltip has canvas.css's style").toEqual({ position: "absolute", background: "rgb(255, 251, 230)", border: "rgb(201, 180, 88)" });
    await shot(page, "viewer-symbol");
  });

  test("mxnb's own -symbol.json opens too, with the input's shape on its node and its edge", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.own_symbol }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .mxnb-panel[data-nodes]");
    await viewer.locator(".mxnb-canvas svg g.node").first().waitFor({ timeout: 60_000 });
    await expect(viewer).toHaveAttribute("data-nodes", String(config.own_symbol_nodes));
    await expect(viewer.locator(".mxnb-canvas svg g.node")).toHaveCount(config.own_symbol_nodes);
    const data = viewer.locator(".mxnb-canvas svg g.node", { hasText: "data" }).first();
    expect(await data.textContent()).toContain(config.own_symbol_shape);
    const edgeLabels = await viewer.locator(".mxnb-canvas svg g.edge text").allTextContents();
    expect(edgeLabels, "the shape labels the data's edge").toContain(config.own_symbol_shape);
    // shapes inferred from the input's: fc1 (16 hidden) and fc2 (10), never MXNet's "(0,)"
    expect(edgeLabels, "inferred shapes label the layers' edges").toEqual(expect.arrayContaining(["(1, 16)", "(1, 10)"]));
    expect(edgeLabels.filter((label) => /\(0,|\(0\)/.test(label)), "no unknown shape shown as 0").toEqual([]);
    await shot(page, "viewer-own-symbol");
  });

  test("the 969-node LSTM symbol opens within 5 s, grouped, and the page stays responsive", async ({ page }) => {
    const started = Date.now();
    await page.locator(".jp-DirListing-item", { hasText: config.lstm }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .mxnb-panel[data-drawn]");
    await viewer.locator(".mxnb-canvas svg g.node").first().waitFor({ timeout: 5_000 });
    const seconds = (Date.now() - started) / 1000;
    expect(seconds, "opened within 5 s").toBeLessThan(5);
    await expect(viewer).toHaveAttribute("data-nodes", String(config.lstm_nodes));
    const drawn = Number(await viewer.getAttribute("data-drawn"));
    expect(drawn, "few enough boxes to lay out").toBeLessThanOrEqual(400);
    await expect(viewer.locator(".mxnb-canvas svg g.node")).toHaveCount(drawn);
    await expect(viewer.locator("input.mxnb-group-prefix")).toBeChecked();
    await expect(viewer.locator("input.mxnb-group-prefix"), "ungrouping 969 nodes is not offered").toBeDisabled();
    await expect(viewer.locator(".mxnb-panel-status")).toContainText("ops grouped by name prefix");
    // the inputs first: the data node is on screen without scrolling
    const data = viewer.locator(".mxnb-canvas svg g.node").filter({ has: page.locator("text", { hasText: /^data$/ }) });
    await expect(data).toHaveCount(1);
    await expect(data).toBeInViewport();
    // the search box marks the nodes named so and brings the first into view
    await viewer.locator("input.mxnb-search").fill("lstm_l1_t20_");
    await expect(viewer).toHaveAttribute("data-found", "1");
    await expect(viewer.locator(".mxnb-canvas svg g.node.mxnb-found")).toBeInViewport();
    await shot(page, "viewer-lstm-search");
    await viewer.locator("input.mxnb-search").fill("");
    // Fit: the whole drawing inside the viewer's window
    await viewer.locator("button.mxnb-fit").click();
    const [drawing, window_] = [await viewer.locator(".mxnb-canvas svg").boundingBox(), await viewer.boundingBox()];
    expect(drawing.height, "the drawing fits the window's height").toBeLessThanOrEqual(window_.height);
    expect(drawing.width).toBeLessThanOrEqual(window_.width);
    await shot(page, "viewer-lstm-fit");
    await viewer.locator("button.mxnb-fit").click(); // back to its natural size
    // a group's box says what it holds
    await viewer.locator(".mxnb-canvas svg g.node", { hasText: "lstm_l0_t3_*" }).first().hover();
    expect(await viewer.locator(".mxnb-tooltip").textContent()).toMatch(/^lstm_l0_t3_\* : \d+ ops/);
    // responsive: over one second, no timer fires more than 250 ms late
    const worst = await page.evaluate(() => new Promise((resolve) => {
      let last = performance.now();
      let worst = 0;
      const tick = setInterval(() => {
        const now = performance.now();
        worst = Math.max(worst, now - last - 50);
        last = now;
      }, 50);
      setTimeout(() => { clearInterval(tick); resolve(worst); }, 1000);
    }));
    expect(worst, "the main thread is free").toBeLessThan(250);
    await shot(page, "viewer-lstm");
  });

  test("a job's 3-process trace opens as 3 process bands with its kvstore events and arrows", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.job }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .mxnb-panel", { has: page.locator("svg.mxnb-timeline") });
    await viewer.locator("svg.mxnb-timeline rect.mxnb-bar").first().waitFor({ timeout: 60_000 });
    const bands = viewer.locator("svg.mxnb-timeline g.mxnb-process");
    await expect(bands).toHaveCount(3);
    expect(await bands.evaluateAll((gs) => gs.map((g) => g.dataset.process))).toEqual(config.job_processes);
    // every process has its own kvstore lane: the lane names repeat per process, never merged
    const lanes = await viewer.locator("svg.mxnb-timeline g.mxnb-lanes > text").allTextContents();
    expect(lanes.filter((name) => name === "kvstore")).toHaveLength(3);
    await expect(viewer.locator(".mxnb-panel-status")).toContainText(`${config.job_kvstore} kvstore events`);
    const svg = viewer.locator("svg.mxnb-timeline");
    expect(Number(await svg.getAttribute("data-ops")), "every engine op and kvstore slice is a bar").toBe(config.job_ops + config.job_kvstore);
    const arrows = await viewer.locator("svg.mxnb-timeline path.mxnb-flow title").allTextContents();
    expect(arrows.some((t) => t.includes("push -> update")), "push -> update arrows").toBe(true);
    expect(arrows.some((t) => t.includes("update -> pull")), "update -> pull arrows").toBe(true);
    expect(arrows.length, "arrows drawn").toBeGreaterThanOrEqual(config.job_kv_flows / 2);
    await shot(page, "viewer-job-trace");
  });

  test("a .trace.json opens as the engine timeline with dependency arrows", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.trace }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget .mxnb-panel", { has: page.locator("svg.mxnb-timeline") });
    await viewer.locator("svg.mxnb-timeline rect.mxnb-bar").first().waitFor({ timeout: 60_000 });
    await expect(viewer.locator("svg.mxnb-timeline rect.mxnb-bar[id^='op']"), "a bar per op of the diamond").toHaveCount(4);
    expect(await viewer.locator("svg.mxnb-timeline path.mxnb-flow").count(), "RAW, WAR arrows drawn").toBeGreaterThanOrEqual(3);
    // a legend names every op drawn, in the colour of its bars
    const legend = await viewer.locator("svg.mxnb-timeline g.mxnb-legend text").allTextContents();
    expect(legend.sort()).toEqual(["read1", "read2", "write", "write2"]);
    const swatch = await viewer.locator("svg.mxnb-timeline g.mxnb-legend rect").first().getAttribute("fill");
    const first = (await viewer.locator("svg.mxnb-timeline g.mxnb-legend text").first().textContent());
    const tips = await viewer.locator("svg.mxnb-timeline rect.mxnb-bar[id^='op']").evaluateAll((rects) => rects.map((r) => r.getAttribute("fill")));
    expect(tips, `a bar has the legend's colour of ${first}`).toContain(swatch);
    await shot(page, "viewer-trace");
  });

  test("the wheel zooms a timeline's time axis only: lane names stay visible, the ticks are labelled again", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.job }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .mxnb-panel", { has: page.locator("svg.mxnb-timeline") });
    const svg = viewer.locator("svg.mxnb-timeline");
    await svg.locator("rect.mxnb-bar").first().waitFor({ timeout: 60_000 });
    const state = () => svg.evaluate((el) => ({
      span: el.dataset.span,
      ticks: [...el.querySelectorAll("g.mxnb-axis text")].map((t) => t.textContent),
      lanes: [...el.querySelectorAll("g.mxnb-lanes > text")].map((t) => {
        const r = t.getBoundingClientRect();
        return { name: t.textContent, x: Math.round(r.left), y: Math.round(r.top), w: Math.round(r.width) };
      }),
    }));
    const before = await state();
    const box = await svg.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
    for (let step = 0; step < 4; step += 1) await page.mouse.wheel(0, -120);
    await expect.poll(async () => (await state()).span).not.toBe(before.span);
    const after = await state();
    expect(after.lanes, "lane names where they were, same size").toEqual(before.lanes);
    for (const lane of after.lanes.slice(0, 3)) {
      expect(lane.x, `${lane.name} inside the viewer`).toBeGreaterThanOrEqual(Math.floor(box.x));
    }
    expect(after.ticks, "the axis is labelled again").not.toEqual(before.ticks);
    const [b0, b1] = before.span.split(" ").map(Number);
    const [a0, a1] = after.span.split(" ").map(Number);
    expect(a1 - a0, "the time span narrowed").toBeLessThan((b1 - b0) * 0.75);
    await shot(page, "viewer-job-trace-zoomed");
  });

  test("a .diff.json opens as two runs' timelines, the slowed op outlined, the rows below", async ({ page }) => {
    await page.locator(".jp-DirListing-item", { hasText: config.diff }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget .mxnb-panel[data-rows]");
    await viewer.waitFor({ timeout: 60_000 });
    await expect(viewer.locator("svg.mxnb-timeline")).toHaveCount(2);
    await expect(viewer.locator("svg.mxnb-timeline rect.mxnb-bar[id^='op']"), "two ops in each run").toHaveCount(4);
    await expect(viewer.locator("svg.mxnb-timeline rect.mxnb-mark"), "the slowed op, in A and in B").toHaveCount(2);
    const first = viewer.locator("table.mxnb-diff-rows tr").nth(1);
    await expect(first).toContainText("slow");
    await expect(viewer.locator("pre.mxnb-diff-summary")).toContainText("makespan ms");
    await shot(page, "viewer-diff");
  });
});

test("engine panels follow the active notebook's kernel", async ({ page }) => {
  await extensionLoaded(page);
  const dag = page.locator(".mxnb-panel[data-view='dag']");
  const timeline = page.locator(".mxnb-panel[data-view='timeline']");
  const dagText = (pattern) => dag.locator("svg g.node text").filter({ hasText: pattern });

  await test.step("DAG and Timeline draw the ops a cell pushes; a click on a node shows it in Inspect", async () => {
    await openFile(page, config.panels);
    await kernelIdle(page);
    await runCell(page, 0); // import mxnb: registers the comm target
    await openSidebar(page);
    await page.locator("#mxnb-engine-sidebar button[data-view='dag']").click();
    await page.locator("#mxnb-engine-sidebar button[data-view='timeline']").click();
    await dag.waitFor();
    await timeline.waitFor();
    await expect(dag.locator(".mxnb-panel-status")).toContainText("ops pushed");
    // while panels are open the engine records: the panels say the timings are perturbed
    await expect(dag.locator(".mxnb-recording")).toBeVisible();
    await expect(timeline.locator(".mxnb-recording")).toHaveText("● recording: timings perturbed");
    // back to the notebook and push ops: the panels show them with no widget in any cell
    await activateNotebook(page);
    await runCell(page, 1);
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node[id^='op']").length >= 12, null, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='timeline'] rect.mxnb-bar").length >= 1, null, { timeout: 30_000 });
    // the cell finished: the panels catch up with every op of it
    await expect(dag.locator(".mxnb-panel-status")).toHaveText(/ 0 pending\s*$/);
    const labels = await dag.locator("svg g.node text").allTextContents();
    expect(labels.some((t) => /write5/.test(t)), `the last write is drawn: ${labels.join(" | ")}`).toBe(true);
    await dag.screenshot({ path: path.join(config.artifacts, "panel-dag.png") });
    await timeline.screenshot({ path: path.join(config.artifacts, "panel-timeline.png") });
    // click a node: Inspect opens and explains that op
    const node = dag.locator("svg g.node", { hasText: "write5" }).first();
    const id = (await node.getAttribute("id")).slice(2);
    await node.locator("text").first().click();
    const inspect = page.locator(".mxnb-panel[data-view='inspect']");
    await inspect.waitFor({ timeout: 30_000 });
    await expect(inspect.locator("pre").first()).toHaveText(new RegExp(`^#${id} write5`));
    await inspect.screenshot({ path: path.join(config.artifacts, "panel-inspect.png") });
    // its lineage is marked in both panels: the earlier writes and reads of 'a' are its ancestors
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='dag'] g.node.mxnb-ancestor").length >= 5, null, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='timeline'] rect.mxnb-ancestor").length >= 1, null, { timeout: 30_000 });
  });

  await test.step("deletes are folded into the ops that freed the arrays; the toggle shows them", async () => {
    await expect(dag.locator("svg g.node", { hasText: "delete:" })).toHaveCount(0);
    await dag.locator("input.mxnb-show-deletes").check();
    await expect(dagText(/^#\d+ delete:/)).not.toHaveCount(0);
    await dag.locator("input.mxnb-show-deletes").uncheck();
    await expect(dagText(/^#\d+ delete:/)).toHaveCount(0);
    await shot(page, "panels");
  });

  await test.step("Memory and Stats panels draw the same kernel's engine", async () => {
    for (const view of ["memory", "stats"]) {
      await page.locator(`#mxnb-engine-sidebar button[data-view='${view}']`).click();
    }
    await page.waitForFunction(() => document.querySelector(".mxnb-panel[data-view='memory'] .mxnb-canvas svg"), null, { timeout: 30_000 });
    await page.waitForFunction(() => {
      const table = document.querySelector(".mxnb-panel[data-view='stats'] table");
      return table && /write/.test(table.textContent) && /read/.test(table.textContent);
    }, null, { timeout: 30_000 });
    for (const view of ["memory", "stats"]) {
      await page.evaluate((v) => window.jupyterapp.shell.activateById(`mxnb-engine-panel-${v}`), view);
      const panel = page.locator(`.mxnb-panel[data-view='${view}']`);
      await panel.waitFor({ state: "visible" });
      await panel.screenshot({ path: path.join(config.artifacts, `panel-${view}.png`) });
    }
  });

  await test.step("another notebook made active switches the panels to its kernel", async () => {
    await openFile(page, config.other);
    await kernelIdle(page);
    await runCell(page, 0); // import mxnb; the panels connect to this kernel once it is idle again
    await expect(dag.locator(".mxnb-status-text"), "the panel names the notebook it follows").toHaveText(/^other\.ipynb — 0 ops pushed/);
    await expect(dagText(/write5/)).toHaveCount(0);
    await runCell(page, 1);
    await expect(dagText(/other2/)).not.toHaveCount(0);
    await expect(dagText(/write5/)).toHaveCount(0);
    await expect(dag.locator("svg g.node", { hasText: "other" })).toHaveCount(3);
  });

  await test.step("back to the first notebook: the panels show its ops again, and say so", async () => {
    await page.evaluate((p) => {
      const notebook = [...window.jupyterapp.shell.widgets("main")].find((w) => w.context && w.context.path === p);
      window.jupyterapp.shell.activateById(notebook.id);
    }, config.panels);
    await expect(dag.locator(".mxnb-status-text")).toHaveText(new RegExp(`^${config.panels.replace(".", "\\.")} — \\d+ ops pushed`));
    await expect(dagText(/write5/)).not.toHaveCount(0);
    await expect(dagText(/other2/)).toHaveCount(0);
  });

  await test.step("Timeline: Clear empties it, Fit fits the axis to the ops, 'since last cell' shows one cell", async () => {
    const ops = () => timeline.locator("svg.mxnb-timeline").getAttribute("data-ops").then(Number);
    await page.evaluate(() => window.jupyterapp.shell.activateById("mxnb-engine-panel-timeline")); // behind Stats
    await timeline.locator("button.mxnb-clear").click();
    await expect(timeline.locator("svg.mxnb-timeline")).toHaveAttribute("data-ops", "0");
    await expect(dag.locator(".mxnb-panel-status")).toHaveText(/— 0 ops pushed/);
    await page.waitForTimeout(1500); // a pause before the cell: not on the axis
    await activateNotebook(page);
    await runCell(page, 1);
    await expect(dag.locator(".mxnb-panel-status")).toHaveText(/ 0 pending\s*$/);
    const once = await settled(ops);
    const svg = timeline.locator("svg.mxnb-timeline");
    const [t0, t1] = (await svg.getAttribute("data-span")).split(" ").map(Number);
    expect(t1 - t0, "the axis spans this cell's ops: not the earlier runs, not the pause").toBeLessThan(1500);
    // Fit: after a wheel zoom (of the time axis only: the drawing keeps its size), the whole axis again
    const box = await svg.getAttribute("viewBox");
    const width = async () => (await svg.getAttribute("data-span")).split(" ").map(Number).reduce((a, b) => b - a);
    const whole = await width();
    await svg.hover();
    await page.mouse.wheel(0, -400);
    await expect.poll(width).toBeLessThan(whole * 0.9);
    await expect(svg).toHaveAttribute("viewBox", box);
    await timeline.locator("button.mxnb-fit").click();
    await expect.poll(width, "Fit: from the first bar to the last").toBeGreaterThan(whole * 0.5);
    expect(await width()).toBeLessThanOrEqual(whole + 1e-6);
    await timeline.screenshot({ path: path.join(config.artifacts, "panel-timeline-fit.png") });
    await activateNotebook(page);
    await runCell(page, 1);
    await expect.poll(ops, { timeout: 30_000, message: "without 'since last cell' the runs add up" }).toBeGreaterThan(once);
    await timeline.locator("input.mxnb-since-cell").check();
    const runs = [];
    for (let i = 0; i < 2; i += 1) {
      await activateNotebook(page);
      await runCell(page, 1);
      await expect(dag.locator(".mxnb-panel-status")).toHaveText(/ 0 pending\s*$/);
      // the cell's clear reached the panel, then all its ops did: more than the 12 pushes, fewer than two runs
      runs.push(await settled(ops));
      expect(runs[i], "one cell's ops, not two runs'").toBeLessThan(1.5 * once);
    }
    expect(runs[0], "each cell run alone").toBe(runs[1]);
    expect(runs[0]).toBeGreaterThan(12);
  });
});

test("a document double-clicked while a panel has focus opens beside the last document, not among the panels", async ({ page }) => {
  await extensionLoaded(page);
  await page.filebrowser.openHomeDirectory();
  await page.locator(".jp-DirListing-item", { hasText: config.trace }).dblclick();
  await page.locator(".jp-MainAreaWidget .mxnb-panel svg.mxnb-timeline").first().waitFor({ timeout: 60_000 });
  const first = await page.evaluate(() => window.jupyterapp.shell.currentWidget.id);
  await page.evaluate(() => window.jupyterapp.commands.execute("mxnb:open-panel", { view: "stats" }));
  await page.locator(".mxnb-panel[data-view='stats']").waitFor();
  await page.evaluate(() => window.jupyterapp.commands.execute("mxnb:open-panel", { view: "dag" }));
  await page.locator(".mxnb-panel[data-view='dag']").click(); // the panel has focus
  expect(await page.evaluate(() => window.jupyterapp.shell.currentWidget.id)).toMatch(/^mxnb-engine-panel-/);
  await page.locator(".jp-DirListing-item", { hasText: config.own_symbol }).dblclick();
  await page.waitForFunction(() => window.jupyterapp.shell.currentWidget?.context?.path?.endsWith("-symbol.json"), null, { timeout: 60_000 });
  const tabs = await page.evaluate(() => {
    const id = window.jupyterapp.shell.currentWidget.id;
    const bar = document.querySelector(`.lm-DockPanel-tabBar li[data-id="${CSS.escape(id)}"]`).closest(".lm-DockPanel-tabBar");
    return [...bar.querySelectorAll("li[data-id]")].map((li) => li.dataset.id);
  });
  expect(tabs.filter((id) => id.startsWith("mxnb-engine-panel-")), "no panel in the document's tab bar").toEqual([]);
  expect(tabs, "beside the document used last").toContain(first);
  await shot(page, "document-beside-document");
});

test("the command palette lists the panels, and a reload brings the docked ones back", async ({ page }) => {
  await extensionLoaded(page);
  await page.evaluate(() => window.jupyterapp.commands.execute("apputils:activate-command-palette"));
  await page.locator(".lm-CommandPalette-input").fill("mxnb");
  const items = page.locator(".lm-CommandPalette-item");
  await expect(items.filter({ hasText: "mxnb: DAG panel" })).toHaveCount(1);
  const labels = await items.allTextContents();
  for (const title of ["DAG", "Timeline", "Memory", "Stats", "Inspect"]) {
    expect(labels.some((t) => t.includes(`mxnb: ${title} panel`)), `${title} in the palette: ${labels.join(" | ")}`).toBe(true);
  }
  await shot(page, "palette");
  await items.filter({ hasText: "mxnb: Timeline panel" }).click();
  await page.locator(".mxnb-panel[data-view='timeline']").waitFor();
  await page.evaluate(() => window.jupyterapp.commands.execute("mxnb:open-panel", { view: "stats" }));
  await page.locator(".mxnb-panel[data-view='stats']").waitFor();
  await page.waitForTimeout(1000); // the layout is saved after a change, debounced
  // a plain browser reload (Galata's page.reload waits for its own helpers, not this page's)
  await page.evaluate(() => window.location.reload());
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.shell.currentWidget !== undefined, null, { timeout: 60_000 });
  await extensionLoaded(page);
  for (const view of ["timeline", "stats"]) {
    await page.locator(`.mxnb-panel[data-view='${view}']`).waitFor({ state: "attached", timeout: 60_000 });
  }
  await shot(page, "restored");
});

test("the Timeline panel and tab draw every op of a few thousand streamed ones", async ({ page }) => {
  await extensionLoaded(page);
  const panel = page.locator(".mxnb-panel[data-view='timeline']");
  const ops = config.stream_ops;
  /** The streamed cell's "streamed N ops, last #ID": the engine's count and last op. */
  const streamed = (index) =>
    page.evaluate((i) => {
      const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
      const match = /streamed (\d+) ops, last #(\d+)/.exec(cell.node.querySelector(".jp-OutputArea-output")?.textContent || "");
      return match ? { count: Number(match[1]), last: Number(match[2]) } : null;
    }, index);
  /** Wait until the timeline in `scope` (a CSS selector) draws `count` ops, the last one `last`. */
  const reaches = (scope, count, last) =>
    page.waitForFunction(
      ([s, n, id]) => {
        const svg = document.querySelector(`${s} svg.mxnb-timeline`);
        return svg && Number(svg.getAttribute("data-ops")) === n && Number(svg.getAttribute("data-last-op")) === id;
      },
      [scope, count, last],
      { timeout: 60_000, polling: 200 }
    );
  /** Ids of the bars inside the visible part of the timeline in `scope`. */
  const inView = (scope) =>
    page.evaluate((s) => {
      const frame = document.querySelector(`${s} .mxnb-canvas`).getBoundingClientRect();
      return [...document.querySelectorAll(`${s} svg.mxnb-timeline rect.mxnb-bar`)]
        .filter((r) => {
          const box = r.getBoundingClientRect();
          return box.width > 0 && box.right > frame.left && box.left < frame.right;
        })
        .map((r) => r.id)
        .sort();
    }, scope);
  const zoomIn = async (scope) => {
    const box = await page.locator(`${scope} svg.mxnb-timeline`).boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.4);
    for (let i = 0; i < 5; i += 1) await page.mouse.wheel(0, -100);
    await page.waitForTimeout(200);
  };
  const redrawFresh = async (scope) => {
    const box = await page.locator(`${scope} svg.mxnb-timeline`).boundingBox();
    await page.mouse.dblclick(box.x + 20, box.y + 4); // the title's row: drawn again from scratch
  };
  const zoomSameAsFresh = async (scope) => {
    await zoomIn(scope);
    const live = await inView(scope);
    expect(live.length, "bars in the zoomed view").toBeGreaterThan(0);
    await redrawFresh(scope);
    await zoomIn(scope);
    expect(await inView(scope), "zoomed after deltas = zoomed after a fresh drawing").toEqual(live);
  };

  await test.step("the Timeline panel follows 3,000 streamed ops to the last one", async () => {
    await openFile(page, config.stream);
    await kernelIdle(page);
    await runCell(page, 0);
    await openSidebar(page);
    await page.locator("#mxnb-engine-sidebar button[data-view='timeline']").click();
    await panel.waitFor();
    await expect(panel.locator(".mxnb-panel-status")).toContainText("ops pushed");
    await activateNotebook(page);
    await runCell(page, 1);
    const run = await streamed(1);
    expect(run && run.count).toBe(ops);
    await reaches(".mxnb-panel[data-view='timeline']", ops, run.last);
    // it got deltas: updates drawn beyond the first, and the svg was kept (not drawn anew each time)
    expect(Number(await panel.getAttribute("data-drawn"))).toBeGreaterThan(2);
    await panel.screenshot({ path: path.join(config.artifacts, "panel-timeline-stream.png") });
  });

  await test.step("a zoom after the deltas shows what a fresh drawing zoomed the same way shows", async () => {
    await page.evaluate(() => window.jupyterapp.shell.activateById("mxnb-engine-panel-timeline"));
    await zoomSameAsFresh(".mxnb-panel[data-view='timeline']");
  });

  await test.step("an EngineMonitor's Timeline tab follows 3,000 more to the last one", async () => {
    await activateNotebook(page);
    await runCell(page, 2);
    await page.waitForSelector(".jp-OutputArea-output .mxnb-canvas svg.mxnb-timeline", { timeout: 60_000 });
    // the monitor's Timeline tab: its canvas, marked so the steps below find it
    await page.evaluate(() => {
      const svg = document.querySelector(".jp-OutputArea-output .mxnb-canvas svg.mxnb-timeline");
      svg.closest(".mxnb-canvas-root").dataset.test = "tab-timeline";
    });
    const scope = "[data-test='tab-timeline']";
    await runCell(page, 3);
    const run = await streamed(3);
    expect(run && run.count).toBe(ops);
    // the monitor attached after the first stream: it shows the second stream's ops
    await reaches(scope, ops, run.last);
    // the panel, still open, drew both streams
    await reaches(".mxnb-panel[data-view='timeline']", 2 * ops, run.last);
    await page.locator(`${scope} svg.mxnb-timeline`).scrollIntoViewIfNeeded();
    await zoomSameAsFresh(scope);
    await shot(page, "monitor-timeline-stream");
  });
});

test.describe("Notebook 7", () => {
  // Galata's page fixture opens /notebooks/<file> and waits for Notebook 7, not for a Launcher
  test.use({
    appPath: "/notebooks",
    autoGoto: false,
    waitForApplication: async ({}, use) => {
      await use(async (page) => {
        await page.waitForFunction(() => window.jupyterapp.name === "Jupyter Notebook" && document.querySelector(".jp-Notebook"), null, { timeout: 120_000 });
      });
    },
  });

  test("loads the extension; the DAG panel (right side) draws the ops a cell pushes", async ({ page }) => {
    await page.goto(config.panels);
    await extensionLoaded(page);
    await kernelIdle(page);
    await runCell(page, 0);
    await page.evaluate(() => window.jupyterapp.commands.execute("mxnb:open-panel", { view: "dag" }));
    await page.locator(".mxnb-panel[data-view='dag']").waitFor({ timeout: 30_000 });
    await runCell(page, 1);
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node[id^='op']").length >= 12, null, { timeout: 30_000 });
    await shot(page, "notebook7-dag");
    await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown());
  });
});

test("EngineMonitor in a cell: a click on a DAG node, before any other tab was opened, shows the op in Inspect", async ({ page }) => {
  await extensionLoaded(page);
  await openFile(page, config.monitor);
  await kernelIdle(page);
  await runCell(page, 0);
  await runCell(page, 1);
  await page.waitForFunction(() => [...document.querySelectorAll(".jp-OutputArea .mxnb-canvas svg g.node text")].some((t) => /mon2/.test(t.textContent)), null, { timeout: 30_000 });
  const node = page.locator(".jp-OutputArea .mxnb-canvas svg g.node", { hasText: "mon2" }).first();
  const id = (await node.getAttribute("id")).slice(2);
  await node.locator("text").first().click();
  await page.waitForFunction(
    (opId) => [...document.querySelectorAll(".jp-OutputArea pre")].some((pre) => pre.offsetParent !== null && pre.textContent.startsWith(`#${opId} mon2`)),
    id,
    { timeout: 30_000 }
  );
  await shot(page, "monitor-inspect");
  await closeNotebook(page);
});

const DRAWN = "svg g.node, svg [id^='op'], svg [id^='entry-'], svg g.patch, svg rect";

test.describe("notebooks run in JupyterLab and every widget draws", () => {
  for (const notebook of config.notebooks) {
    test(`${notebook}: all cells run, no widget error, no traceback, every canvas drew nodes`, async ({ page }) => {
      await extensionLoaded(page);
      await openFile(page, notebook);
      await kernelIdle(page);
      // the kernel started: its kernelspec is the file's, not rewritten
      const kernelspec = await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.getMetadata("kernelspec"));
      expect(kernelspec, "the kernelspec is not rewritten").toEqual(config.kernelspec);
      // nor anything else: the file carries the language_info JupyterLab fills in
      const dirty = await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.dirty);
      expect(dirty, "the notebook does not open as modified").toBe(false);
      // resolves when the last cell ran (or one failed: the checks below then fail)
      await page.evaluate(() => window.jupyterapp.commands.execute("notebook:run-all-cells"));
      await kernelIdle(page);
      // let the last widgets render: every visible canvas drew (the report below says which did not)
      await page
        .waitForFunction((drawn) => {
          const canvases = [...window.jupyterapp.shell.currentWidget.node.querySelectorAll(".mxnb-canvas")].filter((c) => c.offsetParent !== null);
          return canvases.every((c) => c.querySelector(drawn));
        }, DRAWN, { timeout: 10_000, polling: 200 })
        .catch(() => {});
      const report = await page.evaluate((drawn) => {
        const panel = window.jupyterapp.shell.currentWidget;
        const node = panel.node;
        const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
        const outputs = [...node.querySelectorAll(".jp-OutputArea-output")];
        const texts = outputs.map((o) => o.textContent);
        const canvases = [...node.querySelectorAll(".mxnb-canvas")].filter((c) => c.offsetParent !== null);
        return {
          outputs: outputs.length,
          notRun: code.filter((cell) => cell.model.executionCount === null).length,
          widgetErrors: texts.filter((t) => t.includes("Error displaying widget")).length,
          tracebacks: texts.filter((t) => /Traceback \(most recent call last\)|Error: .*\n.*File "/.test(t)).map((t) => t.slice(0, 400)),
          canvases: canvases.length,
          emptyCanvases: canvases.filter((c) => !c.querySelector(drawn)).length,
          // a matplotlib Figure that reached the page as text instead of a picture
          figureTexts: texts.filter((t) => /<Figure size \d+x\d+ with \d+ Axes>/.test(t)).map((t) => t.slice(0, 200)),
          images: [...node.querySelectorAll(".jp-OutputArea-output img")].filter((img) => img.complete && img.naturalWidth > 0).length,
        };
      }, DRAWN);
      await shot(page, `notebook-${notebook.replace(/\.ipynb$/, "")}`);
      expect(report.outputs, "the notebook has outputs").toBeGreaterThan(0);
      expect(report.notRun, "every code cell ran").toBe(0);
      expect(report.widgetErrors, "no 'Error displaying widget'").toBe(0);
      expect(report.tracebacks, "no traceback").toEqual([]);
      expect(report.emptyCanvases, `every visible canvas drew an SVG with nodes (${report.canvases} canvases)`).toBe(0);
      expect(report.figureTexts, "every figure is shown as an image, none as '<Figure size ...>' text").toEqual([]);
      expect(report.images, "the notebook's pictures are drawn images").toBeGreaterThanOrEqual(config.images[notebook] || 0);
      await closeNotebook(page);
    });
  }
});
