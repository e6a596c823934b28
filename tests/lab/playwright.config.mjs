// Galata's Playwright configuration for tests/lab/lab.spec.mjs (run by test_jupyterlab.py).
//
// The JupyterLab server is started by test_jupyterlab.py (server.py: a free port of 127.0.0.1,
// Galata's helper extension, no token) and given here as MXNB_LAB_URL. Debian's chromium is the
// browser (none is downloaded); one worker, since every test shares that server and the
// machine. Screenshots and failure traces go to MXNB_LAB_ARTIFACTS (gitignored).

import baseConfig from "@jupyterlab/galata/lib/playwright-config.js";
import path from "node:path";

const ARTIFACTS = process.env.MXNB_LAB_ARTIFACTS || "artifacts";

export default {
  ...baseConfig,
  testDir: ".",
  testMatch: "lab.spec.mjs",
  outputDir: path.join(ARTIFACTS, "results"),
  workers: 1,
  fullyParallel: false,
  retries: 0,
  forbidOnly: true,
  timeout: 240_000,
  expect: { timeout: 30_000 },
  reporter: [["list"], ["json", { outputFile: path.join(ARTIFACTS, "results.json") }]],
  use: {
    ...baseConfig.use,
    baseURL: process.env.MXNB_LAB_URL,
    viewport: { width: 1500, height: 950 },
    video: "off", // playwright's video needs its own ffmpeg, which would be a download
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    },
  },
};
