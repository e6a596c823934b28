// The browser's part of a live Timeline (benchmarks/extension.py, table 5), in headless Chromium.
//
//   node benchmarks/timeline_browser.mjs STREAM.json
//
// STREAM.json (written by extension.py): the messages a live Timeline view receives for one
// run — a full send, then deltas — and, for each delta, the whole timeline at that moment.
// Two ways to follow the run, timed message by message, each followed by a layout (what the
// browser must do before it paints):
//   deltas       TimelineDrawing.apply(delta): the cells a delta touches are redrawn;
//   full sends   TimelineDrawing.load(whole timeline): every message drawn from scratch
//                (how the views drew before deltas; the peer).
// Prints one JSON line: {"deltas": [ms...], "full": [ms...], "blocks": n, "ops": n}.
// Uses playwright-core and Debian's chromium, as tests/widgets/js does (`make test-setup`).

import { readFile } from "node:fs/promises";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const STATIC = path.resolve(HERE, "../mxnb/widgets/static");
const require = createRequire(path.resolve(HERE, "../tests/widgets/js/package.json"));
const { chromium } = require("playwright-core");
const stream = JSON.parse(await readFile(process.argv[2], "utf8"));

const PAGE = `<!doctype html><html><body><div id="host" style="width:900px"></div>
<script type="module">
import { TimelineDrawing } from "/static/canvas.js";
window.follow = (stream, mode) => {
  const host = document.getElementById("host");
  const drawing = new TimelineDrawing(900);
  drawing.load(stream.full);
  host.replaceChildren(drawing.svg);
  host.getBoundingClientRect();
  const times = [];
  stream.deltas.forEach((delta, i) => {
    const began = performance.now();
    if (mode === "deltas") drawing.apply(delta);
    else drawing.load(stream.wholes[i]);
    void host.getBoundingClientRect().height; // layout
    times.push(performance.now() - began);
  });
  return { times, counts: drawing.counts() };
};
window.ready = true;
</script></body></html>`;

const server = http.createServer(async (request, response) => {
  if (request.url.startsWith("/static/")) {
    response.writeHead(200, { "content-type": "text/javascript" });
    response.end(await readFile(path.join(STATIC, path.basename(request.url))));
  } else {
    response.writeHead(200, { "content-type": "text/html" });
    response.end(PAGE);
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.ready);
  const result = {};
  for (const mode of ["deltas", "full", "deltas", "full"]) { // warmed up, then kept: the 2nd of each
    const { times, counts } = await page.evaluate(([s, m]) => window.follow(s, m), [stream, mode]);
    result[mode] = times;
    result.ops = counts.ops;
    result.blocks = counts.blocks;
  }
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
  server.close();
}
