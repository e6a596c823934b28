// The engine panels: DAG, Timeline, Memory, Stats, Inspect of the ACTIVE notebook's kernel.
//
// EngineClient follows the notebook tracker: when the current notebook (or its kernel)
// changes, it closes its comm and opens one to the kernel's "mxnb.engine" target, which
// `import mxnb` registers (mxnb/widgets/lab.py).  It tells the kernel which views are open;
// the kernel records the engine only while one is, and sends throttled updates (the same
// views and pacing as EngineMonitor).  A kernel without mxnb closes the comm at once: the
// client retries whenever that kernel goes idle (a cell may have imported mxnb meanwhile).
// Every panel's status line names the notebook it follows; a comm opened again to a kernel
// resumes that kernel's recording (switching notebooks and back loses nothing).  The Timeline
// panel's Clear starts a new recording, "since last cell" does so as each cell starts, Fit
// fits the axis to the bars drawn.

import { INotebookTracker } from "@jupyterlab/notebook";
import { Kernel, KernelMessage } from "@jupyterlab/services";
import { Signal } from "@lumino/signaling";
import { Widget } from "@lumino/widgets";

import { LocalModel, mountCanvas } from "./canvas";

export const VIEWS = ["dag", "timeline", "memory", "stats", "inspect"] as const;
export type ViewName = (typeof VIEWS)[number];
export const TITLES: Record<ViewName, string> = {
  dag: "DAG",
  timeline: "Timeline",
  memory: "Memory",
  stats: "Stats",
  inspect: "Inspect",
};
export const TARGET = "mxnb.engine";

type Update = Record<string, any>;

export class EngineClient {
  readonly updated = new Signal<this, Update>(this);
  readonly statusChanged = new Signal<this, string>(this);
  status = "no notebook";
  /** the notebook whose kernel the panels follow ("" when none) */
  path = "";
  last: Update = {};
  private views = new Set<ViewName>();
  private comm: Kernel.IComm | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private opening = false;
  private inspected: number | null = null;
  private options: Update = { last: 40, show_deletes: false };
  private sinceCell = false;

  constructor(private tracker: INotebookTracker) {
    tracker.currentChanged.connect(() => this.follow());
    this.follow();
  }

  /** A panel of `view` was opened or closed: tell the kernel (records only while any is open). */
  setOpen(view: ViewName, open: boolean): void {
    if (open) this.views.add(view);
    else this.views.delete(view);
    if (this.views.size && !this.comm) void this.connect();
    else this.send({ views: [...this.views] });
  }

  /** DAG options, as the monitor's DAG tab has them: the window and the deletes toggle. */
  setDagOptions(last: number, showDeletes: boolean): void {
    this.options = { last, show_deletes: showDeletes };
    this.send(this.options);
  }

  /** Start a new recording in the kernel: every panel's ops and time range begin now. */
  clear(): void {
    this.inspected = null;
    this.send({ clear: true });
  }

  /** Start a new recording each time a cell starts running (the panels show the last cell). */
  setSinceCell(on: boolean): void {
    this.sinceCell = on;
    this.send({ since_cell: on });
  }

  /** The Timeline panel missed a delta (opened later): ask the kernel for the whole timeline. */
  resyncTimeline(seq: unknown): void {
    this.send({ timeline_resync: seq ?? 0 });
  }

  /** Show op `opId` in the Inspect panel (a click on a DAG node or a timeline bar). */
  inspect(opId: number): void {
    this.inspected = opId;
    this.send({ inspect: opId });
  }

  private send(data: Update): void {
    if (this.comm && !this.comm.isDisposed) this.comm.send(data);
  }

  /** Whether the kernel records for these panels now (a comm is open and a view is). */
  get recording(): boolean {
    return !!this.comm && !this.comm.isDisposed && this.views.size > 0;
  }

  private setStatus(text: string): void {
    this.status = this.path ? `${this.path} — ${text}` : text;
    this.statusChanged.emit(this.status);
  }

  private follow(): void {
    const panel = this.tracker.currentWidget;
    const session = panel ? panel.sessionContext : null;
    if (session) {
      session.kernelChanged.connect(() => this.follow());
    }
    const kernel = session?.session?.kernel ?? null;
    if (kernel === this.kernel) return;
    this.disconnect();
    this.kernel = kernel;
    this.path = kernel && panel ? panel.context.path : "";
    this.last = {}; // another kernel: nothing of the last one's drawing stays
    if (kernel) {
      kernel.statusChanged.connect((k, state) => {
        if (k === this.kernel && state === "idle" && !this.comm && this.views.size) void this.connect();
      });
    }
    this.setStatus(kernel ? `kernel ${kernel.name}, ${kernel.id.slice(0, 8)}` : "no notebook with a kernel is active");
    if (this.views.size) void this.connect();
  }

  private disconnect(): void {
    const comm = this.comm;
    this.comm = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        /* the kernel is gone already */
      }
    }
  }

  private async connect(): Promise<void> {
    const kernel = this.kernel;
    if (!kernel || this.opening || this.comm || kernel.isDisposed) return;
    this.opening = true;
    try {
      const comm = kernel.createComm(TARGET);
      comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
        if (comm !== this.comm) return;
        const data = msg.content.data as Update;
        this.last = { ...this.last, ...data };
        this.setStatus(data.status || this.status);
        this.updated.emit(data);
      };
      comm.onClose = () => {
        if (comm === this.comm) {
          this.comm = null;
          this.setStatus("this kernel has not imported mxnb yet: run `import mxnb`");
        }
      };
      this.comm = comm;
      // resume: this kernel's recording, if panels followed it before
      comm.open({ views: [...this.views], inspect: this.inspected, since_cell: this.sinceCell, resume: true, ...this.options });
    } catch (error) {
      this.comm = null;
      this.setStatus(`cannot reach the kernel: ${error}`);
    } finally {
      this.opening = false;
    }
  }
}

/** One dockable panel; it draws the part of each update that is its view. */
export class EnginePanel extends Widget {
  readonly model: LocalModel | null = null;
  private statusLine = document.createElement("div");
  private statusText = document.createElement("span");
  private badge = document.createElement("span");
  private body = document.createElement("div");

  constructor(
    readonly view: ViewName,
    private client: EngineClient,
    onSelect: (opId: number) => void
  ) {
    super();
    this.id = `mxnb-engine-${view}`;
    this.title.label = `mxnb ${TITLES[view]}`;
    this.title.closable = true;
    this.addClass("mxnb-panel");
    this.node.dataset.view = view;
    this.statusLine.className = "mxnb-panel-status";
    this.statusText.className = "mxnb-status-text";
    this.badge.className = "mxnb-recording";
    this.badge.textContent = "● recording: timings perturbed";
    this.badge.title =
      "While a panel is open the engine records every op for it, which slows ops down " +
      "(a 1,200-op loop ran about 9x slower). Close the panels to time code.";
    this.statusLine.append(this.badge, this.statusText);
    this.node.append(this.statusLine);
    if (view === "dag") this.node.append(this.dagControls());
    if (view === "timeline") this.node.append(this.timelineControls());
    this.node.append(this.body);
    if (view === "dag" || view === "timeline" || view === "memory") {
      this.model = mountCanvas(this.body);
      this.model.onSend = (content) => {
        if (content.timeline_resync !== undefined) client.resyncTimeline(content.timeline_resync);
      };
      this.model.on("change:clicks", () => {
        const match = /^op(\d+)$/.exec(this.model?.get("selected") || "");
        if (match) onSelect(Number(match[1]));
      });
    }
    client.updated.connect((_, data) => this.draw(data));
    client.statusChanged.connect((_, text) => this.showStatus(text));
    this.showStatus(client.status);
    this.draw(client.last);
  }

  private showStatus(text: string): void {
    this.statusText.textContent = text;
    this.badge.hidden = !this.client.recording;
  }

  /** "last ops" and "show deletes", sent to the kernel on change. */
  private dagControls(): HTMLElement {
    const bar = document.createElement("div");
    bar.className = "mxnb-panel-controls";
    const last = document.createElement("input");
    last.type = "number";
    last.min = "1";
    last.value = "40";
    last.title = "the DAG shows the most recent ops";
    const deletes = document.createElement("input");
    deletes.type = "checkbox";
    deletes.className = "mxnb-show-deletes";
    const send = () => this.client.setDagOptions(Math.max(1, Number(last.value) || 40), deletes.checked);
    last.addEventListener("change", send);
    deletes.addEventListener("change", send);
    const lastLabel = document.createElement("label");
    lastLabel.append("last ops ", last);
    const deletesLabel = document.createElement("label");
    deletesLabel.append(deletes, " show deletes");
    bar.append(lastLabel, deletesLabel);
    return bar;
  }

  /** Clear, "since last cell" (sent to the kernel) and Fit (the drawing's axis). */
  private timelineControls(): HTMLElement {
    const bar = document.createElement("div");
    bar.className = "mxnb-panel-controls";
    const button = (text: string, className: string, title: string, click: () => void) => {
      const b = document.createElement("button");
      b.textContent = text;
      b.className = className;
      b.title = title;
      b.addEventListener("click", click);
      return b;
    };
    const clear = button("Clear", "mxnb-clear", "start a new recording: every panel's ops and time range begin now", () => this.client.clear());
    const fit = button("Fit", "mxnb-fit", "fit the time axis to the ops drawn", () => this.model?.custom({ timeline_fit: true }));
    const since = document.createElement("input");
    since.type = "checkbox";
    since.className = "mxnb-since-cell";
    since.addEventListener("change", () => this.client.setSinceCell(since.checked));
    const sinceLabel = document.createElement("label");
    sinceLabel.title = "a new recording each time a cell starts: the panels show the last cell's ops";
    sinceLabel.append(since, " since last cell");
    bar.append(clear, fit, sinceLabel);
    return bar;
  }

  protected onAfterAttach(): void {
    this.client.setOpen(this.view, true);
  }

  protected onBeforeDetach(): void {
    this.client.setOpen(this.view, false);
  }

  private draw(data: Update): void {
    // the clicked op's ancestors and descendants (mxnb/widgets/lab.py), marked across lanes
    if (data.lineage !== undefined && this.model) {
      this.model.set("selected", data.lineage.op); // the op clicked in either panel
      this.model.set("lineage", data.lineage);
    }
    const part = data[this.view];
    if (part === undefined) return;
    if (this.view === "dag" || this.view === "memory") {
      this.model?.set("tooltips", part.tooltips || {});
      this.model?.set("svg", part.svg);
      if (part.selected !== undefined) this.model?.set("selected", part.selected);
    } else if (this.view === "timeline") {
      // the whole timeline once, then deltas the canvas applies (mxnb/widgets/timeline_feed.py)
      if (part.data) this.model?.set("timeline", part.data);
      else if (part.delta) this.model?.custom({ timeline_delta: part.delta });
      if (part.idle) this.model?.custom({ timeline_idle: part.idle }); // a quiet run's idle spans
    } else if (this.view === "stats") {
      this.body.innerHTML = part.html;
    } else {
      this.body.innerHTML = "";
      const pre = document.createElement("pre");
      pre.className = "mxnb-inspect";
      pre.textContent = part.text;
      this.body.append(pre);
    }
    this.node.dataset.drawn = String(Number(this.node.dataset.drawn || 0) + 1);
  }
}
