// The canvas of the cell widgets, reused: mxnb/widgets/static/canvas.js is the ONE source of
// the browser side (anywidget loads it in a cell; webpack bundles it here).  It expects an
// anywidget model; LocalModel is that model's small stand-in (get / set / save_changes /
// on / off), so a panel or a file viewer drives the canvas by setting its traits.

// @ts-ignore -- a plain ES module without types, outside this package's sources
import * as canvasModule from "../../mxnb/widgets/static/canvas.js";

type Listener = (...args: any[]) => void;

interface CanvasModule {
  render(args: { model: LocalModel; el: HTMLElement }): () => void;
  renderTimeline(data: unknown, width: number, tips?: Record<string, string>): string;
}

// render comes through the default export only (anywidget warns about a named one)
const loaded = canvasModule as unknown as { default: Pick<CanvasModule, "render"> } & CanvasModule;
export const canvas: CanvasModule = { render: loaded.default.render, renderTimeline: loaded.renderTimeline };

export class LocalModel {
  private state: Record<string, unknown>;
  private listeners = new Map<string, Listener[]>();
  /** Where the canvas's messages to the kernel go (a timeline asking to resync). */
  onSend: (content: Record<string, unknown>) => void = () => undefined;

  constructor(traits: Record<string, unknown> = {}) {
    this.state = { svg: "", tooltips: {}, selected: "", clicks: 0, groups: {}, links: {}, lineage: {}, timeline: {}, timeline_seq: 0, ...traits };
  }

  get(name: string): any {
    return this.state[name];
  }

  set(name: string, value: unknown): void {
    const old = this.state[name];
    this.state[name] = value;
    if (old !== value) {
      for (const callback of this.listeners.get(`change:${name}`) || []) callback();
    }
  }

  /** A message from the kernel, as anywidget's "msg:custom" (a live timeline's delta). */
  custom(content: Record<string, unknown>): void {
    for (const callback of this.listeners.get("msg:custom") || []) callback(content, []);
  }

  /** The canvas's message to the kernel (anywidget's model.send). */
  send(content: Record<string, unknown>): void {
    this.onSend(content);
  }

  save_changes(): void {
    /* nothing to sync: the panel reads the traits it cares about through on() */
  }

  on(event: string, callback: Listener): void {
    this.listeners.set(event, [...(this.listeners.get(event) || []), callback]);
  }

  off(event: string, callback: Listener): void {
    this.listeners.set(event, (this.listeners.get(event) || []).filter((c) => c !== callback));
  }
}

/** Mount the canvas in `el` on a new LocalModel; returns the model (set svg / timeline on it). */
export function mountCanvas(el: HTMLElement, traits: Record<string, unknown> = {}): LocalModel {
  const model = new LocalModel(traits);
  canvas.render({ model, el });
  return model;
}
