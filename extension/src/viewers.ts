// File viewers, no kernel needed: an MXNet / mxnb `*-symbol.json` opens as the network graph
// (laid out in the browser by Graphviz compiled to WebAssembly, @viz-js/viz), a chrome trace
// written by mx.engine.trace or a job's ClusterTrace (`*.trace.json`) as the engine timeline
// with its arrows, one band per process (trace.ts) (canvas.js renderTimeline, the same drawing as the live Timeline), and a trace diff
// written by TraceDiffView.save (`*.diff.json`) as two timelines aligned, the largest changes
// outlined, the ranked rows below.

import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, IDocumentWidget } from "@jupyterlab/docregistry";
import { Widget } from "@lumino/widgets";
import { instance } from "@viz-js/viz";

import { mountCanvas } from "./canvas";
import { Detail, defaultDetail, fits, NODE_LIMIT, symbolToDot } from "./symbol";
import { traceToTimeline } from "./trace";

type Json = any;

let vizPromise: ReturnType<typeof instance> | null = null;

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

/** The network graph of a symbol JSON: a node per op / variable, shapes on edges when known;
 * a large graph drawn with its parameters hidden and its ops grouped by name prefix (symbol.ts). */
export class SymbolViewer extends JsonViewer {
  private detail: Detail | null = null;
  private symbol: Json = null;
  private controls = document.createElement("div");
  private params = checkbox("mxnb-show-params", "parameters");
  private group = checkbox("mxnb-group-prefix", "group by name prefix");
  private search = document.createElement("input");

  constructor(context: DocumentRegistry.Context) {
    super(context);
    this.controls.className = "mxnb-panel-controls";
    this.search.type = "search";
    this.search.className = "mxnb-search";
    this.search.placeholder = "find a node by name";
    this.search.addEventListener("input", () => this.find());
    const fit = document.createElement("button");
    fit.textContent = "Fit";
    fit.className = "mxnb-fit";
    fit.title = "the whole graph in the window (again: its natural size)";
    fit.addEventListener("click", () => this.fitWindow());
    this.controls.append(this.search, fit, this.params.label, this.group.label);
    this.status.after(this.controls);
    for (const box of [this.params.input, this.group.input]) {
      box.addEventListener("change", () => {
        this.detail = { params: this.params.input.checked, group: this.group.input.checked };
        void this.draw(this.symbol);
      });
    }
  }

  /** The whole drawing in the viewer's window, or (when it is so already) its natural size. */
  fitWindow(): void {
    const svg = this.node.querySelector<SVGSVGElement>(".mxnb-canvas svg");
    if (!svg) return;
    const fitted = this.node.classList.toggle("mxnb-fitted");
    if (fitted) {
      const room = this.node.clientHeight - this.controls.offsetHeight - this.status.offsetHeight - 24;
      svg.dataset.width = svg.style.width; // as the canvas sized it
      svg.dataset.minWidth = svg.style.minWidth;
      Object.assign(svg.style, { height: `${Math.max(room, 100)}px`, width: "auto", minWidth: "0" });
    } else {
      Object.assign(svg.style, { height: "auto", width: svg.dataset.width || "", minWidth: svg.dataset.minWidth || "" });
    }
  }

  /** Mark the nodes whose text holds the search box's words; scroll to the first. */
  find(): void {
    const query = this.search.value.trim().toLowerCase();
    let first: Element | null = null;
    for (const node of this.node.querySelectorAll(".mxnb-canvas svg g.node")) {
      const hit = query !== "" && (node.textContent || "").toLowerCase().includes(query);
      node.classList.toggle("mxnb-found", hit);
      if (hit && !first) first = node;
    }
    this.node.dataset.found = String(this.node.querySelectorAll("g.node.mxnb-found").length);
    first?.scrollIntoView({ block: "center", inline: "center" });
  }

  protected async draw(symbol: Json): Promise<void> {
    if (!Array.isArray(symbol.nodes)) throw new Error("no 'nodes' list: not a symbol JSON");
    if (symbol !== this.symbol) this.detail = null; // a new file: its own default detail
    this.symbol = symbol;
    const detail = this.detail && fits(symbol, this.detail) ? this.detail : defaultDetail(symbol);
    this.params.input.checked = detail.params;
    this.group.input.checked = detail.group;
    // ungrouping is offered only where the whole graph can be laid out in the browser
    this.group.input.disabled = detail.group && !fits(symbol, { ...detail, group: false });
    this.group.label.title = this.group.input.disabled ? `over ${NODE_LIMIT} nodes: too many to lay out here` : "";
    const { dot, tooltips, count, drawn } = symbolToDot(symbol, detail);
    this.status.textContent = `${this.context.path}: ${count} nodes, laying out ${drawn}...`;
    vizPromise = vizPromise || instance();
    const viz = await vizPromise;
    const started = performance.now();
    const svg = viz.renderString(dot, { format: "svg" });
    const ms = performance.now() - started;
    this.model.set("tooltips", tooltips);
    this.model.set("svg", svg);
    this.node.classList.remove("mxnb-fitted"); // a new drawing, at its natural size
    this.node.dataset.nodes = String(count);
    this.node.dataset.drawn = String(drawn);
    // the inputs first: the graph runs bottom (data) to top (output), so show its bottom
    requestAnimationFrame(() => {
      for (const el of [this.node, this.node.querySelector(".mxnb-canvas")]) if (el) el.scrollTop = el.scrollHeight;
      this.find();
    });
    const shown = drawn === count ? `${count} nodes` : `${count} nodes, ${drawn} boxes drawn`;
    const hidden = [detail.params ? "" : "parameters hidden", detail.group ? "ops grouped by name prefix" : ""]
      .filter(Boolean)
      .join(", ");
    this.status.textContent = `${this.context.path}: ${shown}${hidden ? ` (${hidden})` : ""}, laid out in ${(ms / 1000).toFixed(1)} s; hover a node for its attributes`;
  }
}

function checkbox(className: string, text: string): { label: HTMLLabelElement; input: HTMLInputElement } {
  const label = document.createElement("label");
  const input = document.createElement("input");
  input.type = "checkbox";
  input.className = className;
  label.append(input, ` ${text}`);
  return { label, input };
}

/** The engine timeline of a chrome trace, with dependency arrows while they stay legible. */
export class TraceViewer extends JsonViewer {
  protected async draw(trace: Json): Promise<void> {
    const data = traceToTimeline(trace);
    this.model.set("timeline", data);
    const arrows = this.node.querySelectorAll("path.mxnb-flow").length;
    this.status.textContent = `${this.context.path}: ${data.title}, ${arrows} of ${data.flows.length} arrows drawn`;
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
