// mxnb in a real JupyterLab, driven in Debian's Chromium by real clicks (playwright-core).
//
//   node --test-reporter=tap lab.test.mjs CONFIG.json
//
// CONFIG.json is written by tests/lab/test_jupyterlab.py, which started the JupyterLab server
// (127.0.0.1, a free port, with --LabApp.expose_app_in_browser so `window.jupyterapp` runs
// commands such as notebook:run-all-cells). playwright-core comes from tests/widgets/js (the
// one pin, 1.61.1, the last release that runs on Debian 12's node 18). Screenshots are
// written to config.artifacts (gitignored).

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(HERE, "../widgets/js/package.json"));
const { chromium } = require("playwright-core");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

if (!process.argv[2]) throw new Error("usage: node lab.test.mjs CONFIG.json");
const config = JSON.parse(await readFile(process.argv[2], "utf8"));

let browser;
let page;
const consoleErrors = [];

async function shot(name) {
  await page.screenshot({ path: path.join(config.artifacts, `${name}.png`) });
}

/** Open JupyterLab at `tree` (a file to open, or "") and wait for the app to be ready. */
async function openLab(tree = "") {
  const where = tree ? `lab/tree/${tree}` : "lab";
  await page.goto(`${config.url}/${where}?token=${config.token}&reset`, { waitUntil: "domcontentloaded" });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.shell && document.querySelector("#jp-main-dock-panel"), null, { timeout: 120_000 });
  await page.waitForSelector("#mxnb-engine-sidebar", { state: "attached", timeout: 60_000 });
}

/** Wait until the current notebook's kernel is connected and idle. */
async function kernelIdle(timeout = 120_000) {
  await page.waitForFunction(() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
  }, null, { timeout, polling: 250 });
}

/** Run every cell of the current notebook; resolves when the last finished. */
async function runAll() {
  // the command resolves when the last cell ran (or one failed: the check below then fails)
  await page.evaluate(() => window.jupyterapp.commands.execute("notebook:run-all-cells"));
  await kernelIdle();
}

async function runCell(index) {
  await page.evaluate(async (i) => {
    const panel = window.jupyterapp.shell.currentWidget;
    panel.content.activeCellIndex = i;
    await window.jupyterapp.commands.execute("notebook:run-cell");
  }, index);
  await kernelIdle();
}

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
});

after(async () => {
  await browser?.close();
});

describe("file viewers (no kernel)", () => {
  it("a -symbol.json double-clicked in the file browser opens as the network graph", async () => {
    await openLab();
    const item = page.locator(".jp-DirListing-item", { hasText: config.symbol });
    await item.dblclick();
    const viewer = page.locator(".jp-MainAreaWidget .mxnb-panel[data-nodes]");
    await viewer.waitFor({ timeout: 60_000 });
    assert.equal(await viewer.getAttribute("data-nodes"), String(config.symbol_nodes));
    const nodes = viewer.locator(".mxnb-canvas svg g.node");
    await nodes.first().waitFor();
    assert.equal(await nodes.count(), config.symbol_nodes);
    // hover an op node: its attributes show
    const conv = viewer.locator(".mxnb-canvas svg g.node", { hasText: "Convolution" }).first();
    await conv.hover();
    const tip = await viewer.locator(".mxnb-tooltip").textContent();
    assert.match(tip, /\(Convolution\)\nkernel = \(5, 5\)/);
    await shot("viewer-symbol");
  });

  it("mxnb's own -symbol.json opens too, with the input's shape on its node and its edge", async () => {
    await page.locator(".jp-DirListing-item", { hasText: config.own_symbol }).dblclick();
    const viewer = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .mxnb-panel[data-nodes]");
    await viewer.locator(".mxnb-canvas svg g.node").first().waitFor({ timeout: 60_000 });
    assert.equal(await viewer.getAttribute("data-nodes"), String(config.own_symbol_nodes));
    assert.equal(await viewer.locator(".mxnb-canvas svg g.node").count(), config.own_symbol_nodes);
    const data = viewer.locator(".mxnb-canvas svg g.node", { hasText: "data" }).first();
    assert.match(await data.textContent(), new RegExp(config.own_symbol_shape.replace(/[()]/g, "\\$&")));
    const edgeLabels = await viewer.locator(".mxnb-canvas svg g.edge text").allTextContents();
    assert.ok(edgeLabels.includes(config.own_symbol_shape), `the shape labels the data's edge: ${edgeLabels.join(" | ")}`);
    await shot("viewer-own-symbol");
  });

  it("a .trace.json opens as the engine timeline with dependency arrows", async () => {
    const item = page.locator(".jp-DirListing-item", { hasText: config.trace });
    await item.dblclick();
    const viewer = page.locator(".jp-MainAreaWidget .mxnb-panel", { has: page.locator("svg.mxnb-timeline") });
    await viewer.locator("svg.mxnb-timeline rect.mxnb-bar").first().waitFor({ timeout: 60_000 });
    const names = await viewer.locator("svg.mxnb-timeline rect.mxnb-bar[id^='op']").count();
    assert.equal(names, 4, "a bar per op of the diamond");
    assert.ok((await viewer.locator("svg.mxnb-timeline path.mxnb-flow").count()) >= 3, "RAW, WAR arrows drawn");
    await shot("viewer-trace");
  });
});

describe("engine panels follow the notebook's kernel", () => {
  it("DAG and Timeline panels draw the ops a cell pushes; a click on a node shows it in Inspect", async () => {
    await openLab(config.panels);
    await kernelIdle();
    await runCell(0); // import mxnb: registers the comm target
    await page.locator(".jp-SideBar .lm-TabBar-tab[title='mxnb engine'], .jp-SideBar li[title='mxnb engine']").first().click();
    await page.locator("#mxnb-engine-sidebar button[data-view='dag']").click();
    await page.locator("#mxnb-engine-sidebar button[data-view='timeline']").click();
    const dag = page.locator(".mxnb-panel[data-view='dag']");
    const timeline = page.locator(".mxnb-panel[data-view='timeline']");
    await dag.waitFor();
    await timeline.waitFor();
    await page.waitForFunction(() => /ops pushed/.test(document.querySelector(".mxnb-panel[data-view='dag'] .mxnb-panel-status").textContent), null, { timeout: 30_000 });
    // back to the notebook and push ops: the panels show them with no widget in any cell
    await page.evaluate(() => {
      const tracker = [...window.jupyterapp.shell.widgets("main")].find((w) => w.context && w.context.path.endsWith(".ipynb"));
      window.jupyterapp.shell.activateById(tracker.id);
    });
    await runCell(1);
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node[id^='op']").length >= 12, null, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='timeline'] rect.mxnb-bar").length >= 1, null, { timeout: 30_000 });
    // the cell finished: the panels catch up with every op of it
    await page.waitForFunction(() => / 0 pending$/.test(document.querySelector(".mxnb-panel[data-view='dag'] .mxnb-panel-status").textContent.trim()), null, { timeout: 30_000 });
    const labels = await dag.locator("svg g.node text").allTextContents();
    assert.ok(labels.some((t) => /write5/.test(t)), `the last write is drawn: ${labels.join(" | ")}`);
    await dag.screenshot({ path: path.join(config.artifacts, "panel-dag.png") });
    await timeline.screenshot({ path: path.join(config.artifacts, "panel-timeline.png") });
    // click a node: Inspect opens and explains that op
    const node = dag.locator("svg g.node", { hasText: "write5" }).first();
    const id = await node.getAttribute("id");
    await node.locator("text").first().click();
    const inspect = page.locator(".mxnb-panel[data-view='inspect']");
    await inspect.waitFor({ timeout: 30_000 });
    await page.waitForFunction((opId) => {
      const pre = document.querySelector(".mxnb-panel[data-view='inspect'] pre");
      return pre && pre.textContent.startsWith(`#${opId} write5`);
    }, id.slice(2), { timeout: 30_000 });
    await inspect.screenshot({ path: path.join(config.artifacts, "panel-inspect.png") });
    // the NDArray ops' deletes are folded into the ops that freed the arrays; the toggle shows them
    const deleteNodes = () => dag.locator("svg g.node", { hasText: "delete:" }).count();
    assert.equal(await deleteNodes(), 0);
    await dag.locator("input.mxnb-show-deletes").check();
    await page.waitForFunction(() => [...document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node text")].some((t) => /^#\d+ delete:/.test(t.textContent)), null, { timeout: 30_000 });
    await dag.locator("input.mxnb-show-deletes").uncheck();
    await page.waitForFunction(() => ![...document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node text")].some((t) => /^#\d+ delete:/.test(t.textContent)), null, { timeout: 30_000 });
    await shot("panels");
  });

  it("Memory and Stats panels draw the same kernel's engine", async () => {
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


  it("another notebook made active switches the panels to its kernel", async () => {
    await page.evaluate(async (name) => void (await window.jupyterapp.commands.execute("docmanager:open", { path: name })), config.other);
    await page.waitForFunction((name) => window.jupyterapp.shell.currentWidget?.context?.path === name, config.other);
    await kernelIdle();
    await runCell(0); // import mxnb; the panels connect to this kernel once it is idle again
    await page.waitForFunction(() => {
      const status = document.querySelector(".mxnb-panel[data-view='dag'] .mxnb-panel-status").textContent;
      const texts = [...document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node text")].map((t) => t.textContent);
      return /^0 ops pushed/.test(status) && !texts.some((t) => /write5/.test(t));
    }, null, { timeout: 30_000 });
    await runCell(1);
    const dag = page.locator(".mxnb-panel[data-view='dag']");
    await page.waitForFunction(() => {
      const texts = [...document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node text")].map((t) => t.textContent);
      return texts.some((t) => /other2/.test(t)) && !texts.some((t) => /write5/.test(t));
    }, null, { timeout: 30_000 });
    assert.equal(await dag.locator("svg g.node", { hasText: "other" }).count(), 3);
  });
});

describe("Notebook 7", () => {
  it("loads the extension; the DAG panel (right side) draws the ops a cell pushes", async () => {
    await page.goto(`${config.url}/notebooks/${config.panels}?token=${config.token}`, { waitUntil: "domcontentloaded" });
    await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.name === "Jupyter Notebook" && document.querySelector(".jp-Notebook"), null, { timeout: 120_000 });
    await page.waitForSelector("#mxnb-engine-sidebar", { state: "attached", timeout: 60_000 });
    await kernelIdle();
    await runCell(0);
    await page.evaluate(() => window.jupyterapp.commands.execute("mxnb:open-panel", { view: "dag" }));
    await page.locator(".mxnb-panel[data-view='dag']").waitFor({ timeout: 30_000 });
    await runCell(1);
    await page.waitForFunction(() => document.querySelectorAll(".mxnb-panel[data-view='dag'] svg g.node[id^='op']").length >= 12, null, { timeout: 30_000 });
    await shot("notebook7-dag");
  });
});

describe("EngineMonitor in a cell", () => {
  it("a click on a DAG node, before any other tab was opened, shows the op in the Inspect tab", async () => {
    await openLab(config.monitor);
    await kernelIdle();
    await runCell(0);
    await runCell(1);
    await page.waitForFunction(() => [...document.querySelectorAll(".jp-OutputArea .mxnb-canvas svg g.node text")].some((t) => /mon2/.test(t.textContent)), null, { timeout: 30_000 });
    const node = page.locator(".jp-OutputArea .mxnb-canvas svg g.node", { hasText: "mon2" }).first();
    const id = (await node.getAttribute("id")).slice(2);
    await node.locator("text").first().click();
    await page.waitForFunction(
      (opId) => [...document.querySelectorAll(".jp-OutputArea pre")].some((pre) => pre.offsetParent !== null && pre.textContent.startsWith(`#${opId} mon2`)),
      id,
      { timeout: 30_000 }
    );
    await shot("monitor-inspect");
    await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown());
  });
});

describe("notebooks run in JupyterLab and every widget draws", () => {
  before(async () => {
    await openLab(); // one page load; each notebook then opens in it, as a user opens files
  });

  for (const notebook of config.notebooks) {
    it(`${notebook}: all cells run, no widget error, no traceback, every canvas drew nodes`, async () => {
      await page.evaluate(async (name) => void (await window.jupyterapp.commands.execute("docmanager:open", { path: name })), notebook);
      await page.waitForFunction((name) => window.jupyterapp.shell.currentWidget?.context?.path === name, notebook, { timeout: 60_000 });
      await kernelIdle();
      await runAll();
      // let the last widgets render: every visible canvas drew (the report below says which did not)
      await page
        .waitForFunction(() => {
          const canvases = [...window.jupyterapp.shell.currentWidget.node.querySelectorAll(".mxnb-canvas")].filter((c) => c.offsetParent !== null);
          return canvases.every((c) => c.querySelector("svg g.node, svg [id^='op'], svg [id^='entry-'], svg g.patch, svg rect"));
        }, null, { timeout: 10_000, polling: 200 })
        .catch(() => {});
      const report = await page.evaluate(() => {
        const panel = window.jupyterapp.shell.currentWidget;
        const notebook = panel.node;
        const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
        const notRun = code.filter((cell) => cell.model.executionCount === null).length;
        const outputs = [...notebook.querySelectorAll(".jp-OutputArea-output")];
        const texts = outputs.map((o) => o.textContent);
        const canvases = [...notebook.querySelectorAll(".mxnb-canvas")].filter((c) => c.offsetParent !== null);
        const empty = canvases.filter((c) => !c.querySelector("svg g.node, svg [id^='op'], svg [id^='entry-'], svg g.patch, svg rect"));
        return {
          outputs: outputs.length,
          notRun,
          widgetErrors: texts.filter((t) => t.includes("Error displaying widget")).length,
          tracebacks: texts.filter((t) => /Traceback \(most recent call last\)|Error: .*\n.*File "/.test(t)).map((t) => t.slice(0, 400)),
          errorOutputs: notebook.querySelectorAll(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").length,
          canvases: canvases.length,
          emptyCanvases: empty.length,
        };
      });
      await shot(`notebook-${notebook.replace(/\.ipynb$/, "")}`);
      const missing = consoleErrors.filter((text) => /widget model not found/i.test(text));
      assert.deepEqual(missing, [], "no 'widget model not found' in the browser console");
      assert.ok(report.outputs > 0, "the notebook has outputs");
      assert.equal(report.notRun, 0, "every code cell ran");
      assert.equal(report.widgetErrors, 0, "no 'Error displaying widget'");
      assert.deepEqual(report.tracebacks, [], "no traceback");
      assert.equal(report.emptyCanvases, 0, `every visible canvas drew an SVG with nodes (${report.canvases} canvases)`);
      await page.evaluate(async () => {
        const panel = window.jupyterapp.shell.currentWidget;
        await panel.sessionContext.shutdown();
        panel.context.model.dirty = false; // closes without the "save your work?" dialog
        panel.dispose();
      });
    });
  }
});
