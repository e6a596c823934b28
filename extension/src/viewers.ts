// File viewers, no kernel needed: an MXNet / mxnb `*-symbol.json` opens as the network graph
// (laid out in the browser by Graphviz compiled to WebAssembly, @viz-js/viz), a chrome trace
// written by mx.engine.trace (`*.trace.json`) as the engine timeline with its dependency
// arrows (canvas.js renderTimeline, the same drawing as the live Timeline), and a trace diff
// written by TraceDiffView.save (`*.diff.json`) as two timelines aligned, the largest changes
// outlined, the ranked rows below.

import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, IDocumentWidget } from "@jupyterlab/docregistry";
import { Widget } from "@lumino/widgets";
import { instance } from "@viz-js/viz";

import { mountCanvas } from "./canvas";

type Json = any;

let vizPromise: ReturnType<typeof instance> | null = null;

function dotString(text: string): string {
  return `"${String(text).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

function nodeAttrs(node: Json): Record<string, string> {
  return { ...(node.param || {}), ...(node.attr || {}), ...(node.attrs || {}) };
}

/** DOT of a symbol JSON (MXNet's `nodes` / `heads` layout, mxnb writes the same). */
export function symbolToDot(symbol: Json): { dot: string; tooltips: Record<string, string>; count: number } {
  const nodes: Json[] = symbol.nodes || [];
  const lines = [
    "digraph symbol {",
    'rankdir=BT; fontname="Helvetica"; nodesep=0.25; ranksep=0.35;',
    'node [fontname="Helvetica", fontsize=10, style="rounded,filled"];',
    'edge [fontname="Helvetica", fontsize=8, arrowsize=0.6, color="#555555"];',
  ];
  const tooltips: Record<string, string> = {};
  const shapes = new Map<number, string>();
  nodes.forEach((node, i) => {
    const attrs = nodeAttrs(node);
    if (attrs.__shape__) shapes.set(i, attrs.__shape__);
    const variable = node.op === "null";
    const label = variable
      ? `${node.name}${attrs.__shape__ ? `\n${attrs.__shape__}` : ""}`
      : `${node.name}\n${node.op}`;
    const tip = [`${node.name} (${variable ? "variable" : node.op})`]
      .concat(Object.entries(attrs).map(([k, v]) => `${k} = ${v}`))
      .join("\n");
    tooltips[`op${i}`] = tip;
    const style = variable
      ? 'shape=ellipse, style="filled", fillcolor="#fff7e0", fontsize=9'
      : 'shape=box, fillcolor="#8ec5ff"';
    lines.push(`n${i} [id="op${i}", label=${dotString(label)}, tooltip=${dotString(tip)}, ${style}];`);
  });
  nodes.forEach((node, i) => {
    for (const input of node.inputs || []) {
      const source = input[0];
      const shape = shapes.get(source);
      lines.push(`n${source} -> n${i}${shape ? ` [label=${dotString(shape)}]` : ""};`);
    }
  });
  lines.push("}");
  return { dot: lines.join("\n"), tooltips, count: nodes.length };
}

/** Timeline data (as Python's Timeline.to_data()) of a chrome trace from mx.engine.trace. */
export function traceToTimeline(trace: Json): Json {
  const events: Json[] = Array.isArray(trace) ? trace : trace.traceEvents || [];
  const laneNames = new Map<number, string>();
  for (const e of events) if (e.ph === "M" && e.name === "thread_name") laneNames.set(e.tid, e.args.name);
  const lanes = new Map<number, Json>();
  const lane = (tid: number, kind: string) => {
    if (!lanes.has(tid)) {
      const name = laneNames.get(tid) || `lane ${tid}`;
      lanes.set(tid, { name, kind, device: name.split("/")[0], bars: [] });
    }
    return lanes.get(tid);
  };
  let first = Infinity;
  let last = -Infinity;
  let ops = 0;
  for (const e of events) {
    if (e.ph !== "X") continue;
    const start = e.ts / 1000;
    const end = (e.ts + (e.dur || 0)) / 1000;
    first = Math.min(first, start);
    last = Math.max(last, end);
    if (e.cat === "op") {
      ops += 1;
      const error = e.args && e.args.error;
      const id = e.args && e.args.op_id !== undefined ? e.args.op_id : null;
      lane(e.tid, "worker").bars.push([id, start, end, e.name, error ? "failed" : "done", error || null]);
    } else if (e.cat === "wait") {
      lane(e.tid, "wait").bars.push([null, start, end, e.name, "wait", null]);
    }
  }
  // a flow starts on the holder's lane inside the holder's bar and ends at the waiter's start
  const opAt = (tid: number, ms: number): number | null => {
    const bars = lanes.get(tid)?.bars || [];
    let best: Json = null;
    for (const b of bars) {
      if (b[0] !== null && b[1] <= ms + 1e-6 && ms <= b[2] + 1e-6 && (!best || b[1] > best[1])) best = b;
    }
    return best ? best[0] : null;
  };
  const starts = new Map<number, Json>();
  const flows: Json[] = [];
  for (const e of events) {
    if (e.cat !== "dependency") continue;
    if (e.ph === "s") starts.set(e.id, e);
    else if (e.ph === "f" && starts.has(e.id)) {
      const s = starts.get(e.id);
      const holder = opAt(s.tid, s.ts / 1000);
      const waiter = opAt(e.tid, e.ts / 1000);
      if (holder !== null && waiter !== null) flows.push([holder, waiter, e.name]);
    }
  }
  const ordered = [...lanes.values()].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === "wait" ? -1 : 1));
  if (!isFinite(first)) {
    first = 0;
    last = 1;
  }
  return {
    title: `engine trace: ${ops} ops, ${ordered.filter((l) => l.kind === "worker").length} workers`,
    span: [first, last],
    lanes: ordered,
    critical: [],
    flows,
  };
}

abstract class JsonViewer extends Widget {
  protected model = mountCanvas(this.node);
  protected status = document.createElement("div");

  constructor(protected context: DocumentRegistry.Context) {
    super();
    this.addClass("mxnb-panel");
    this.node.prepend(this.status);
    this.status.className = "mxnb-panel-status";
    void context.ready.then(() => this.update());
    context.model.contentChanged.connect(() => this.update());
  }

  protected onUpdateRequest(): void {
    let data: Json;
    try {
      data = JSON.parse(this.context.model.toString());
    } catch (error) {
      this.status.textContent = `not JSON: ${error}`;
      return;
    }
    void this.draw(data).catch((error) => {
      this.status.textContent = `cannot draw ${this.context.path}: ${error}`;
    });
  }

  protected abstract draw(data: Json): Promise<void>;
}

/** The network graph of a symbol JSON: a node per op / variable, shapes on edges when known. */
export class SymbolViewer extends JsonViewer {
  protected async draw(symbol: Json): Promise<void> {
    if (!Array.isArray(symbol.nodes)) throw new Error("no 'nodes' list: not a symbol JSON");
    const { dot, tooltips, count } = symbolToDot(symbol);
    vizPromise = vizPromise || instance();
    const viz = await vizPromise;
    const svg = viz.renderString(dot, { format: "svg" });
    this.model.set("tooltips", tooltips);
    this.model.set("svg", svg);
    this.node.dataset.nodes = String(count);
    this.status.textContent = `${this.context.path}: ${count} nodes (hover a node for its attributes)`;
  }
}

/** The engine timeline of a chrome trace, with dependency arrows while they stay legible. */
export class TraceViewer extends JsonViewer {
  protected async draw(trace: Json): Promise<void> {
    const data = traceToTimeline(trace);
    this.model.set("timeline", data);
    this.status.textContent = `${this.context.path}: ${data.title}, ${data.flows.length} dependencies`;
  }
}

/** Two runs compared (TraceDiffView.save): timelines A and B aligned, changes outlined, rows. */
export class DiffViewer extends JsonViewer {
  private holderB = document.createElement("div");
  private modelB = mountCanvas(this.holderB);
  private rows = document.createElement("div");

  constructor(context: DocumentRegistry.Context) {
    super(context);
    this.node.append(this.holderB, this.rows);
  }

  protected async draw(diff: Json): Promise<void> {
    if (!diff.a || !diff.b || !Array.isArray(diff.rows)) throw new Error("no 'a', 'b' and 'rows': not a trace diff");
    this.model.set("timeline", diff.a);
    this.modelB.set("timeline", diff.b);
    const escape = (text: string) => String(text).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c] as string);
    const body = diff.rows
      .slice(0, 20)
      .map((r: Json) => `<tr><td>${escape(r.name)}</td><td>${r.kind}</td><td>${r.a ?? "-"}</td><td>${r.b ?? "-"}</td><td>${Number(r.change_ms).toFixed(3)}</td></tr>`)
      .join("");
    this.rows.innerHTML = `<pre class="mxnb-diff-summary">${escape(diff.summary || "")}</pre>` +
      `<table class="mxnb-table mxnb-diff-rows"><tr><th>op</th><th>kind</th><th>A</th><th>B</th><th>change ms</th></tr>${body}</table>`;
    this.node.dataset.rows = String(diff.rows.length);
    this.status.textContent = `${this.context.path}: ${diff.rows.length} ops compared, ${(diff.marked?.b || []).length} largest changes outlined`;
  }
}

class Factory<T extends JsonViewer> extends ABCWidgetFactory<IDocumentWidget<T>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<IDocumentWidget<T>>,
    private readonly make: (context: DocumentRegistry.Context) => T
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): IDocumentWidget<T> {
    return new DocumentWidget({ content: this.make(context), context }) as unknown as IDocumentWidget<T>;
  }
}

/** Register the three file types and their viewers (the default for double-click). */
export function registerViewers(registry: DocumentRegistry): void {
  registry.addFileType({
    name: "mxnb-symbol",
    displayName: "MXNet symbol",
    extensions: [".json"],
    pattern: ".*-symbol\\.json$",
    mimeTypes: ["application/json"],
    fileFormat: "text",
    contentType: "file",
  });
  registry.addFileType({
    name: "mxnb-trace",
    displayName: "mxnb engine trace",
    extensions: [".trace.json"],
    pattern: ".*\\.trace\\.json$",
    mimeTypes: ["application/json"],
    fileFormat: "text",
    contentType: "file",
  });
  registry.addFileType({
    name: "mxnb-trace-diff",
    displayName: "mxnb trace diff",
    extensions: [".diff.json"],
    pattern: ".*\\.diff\\.json$",
    mimeTypes: ["application/json"],
    fileFormat: "text",
    contentType: "file",
  });
  registry.addWidgetFactory(
    new Factory(
      { name: "mxnb trace diff", fileTypes: ["mxnb-trace-diff"], defaultFor: ["mxnb-trace-diff"] },
      (context) => new DiffViewer(context)
    )
  );
  registry.addWidgetFactory(
    new Factory(
      { name: "MXNet symbol graph", fileTypes: ["mxnb-symbol"], defaultFor: ["mxnb-symbol"] },
      (context) => new SymbolViewer(context)
    )
  );
  registry.addWidgetFactory(
    new Factory(
      { name: "mxnb engine timeline", fileTypes: ["mxnb-trace"], defaultFor: ["mxnb-trace"] },
      (context) => new TraceViewer(context)
    )
  );
}
