// mxnb's JupyterLab 4 / Notebook 7 extension: the "mxnb engine" sidebar with dockable engine
// panels following the active notebook's kernel, and viewers for MXNet symbol JSON files and
// mx.engine.trace chrome traces.  See extension/README.md.
// The command palette lists every panel ("mxnb: DAG panel", ...); a widget tracker with the
// layout restorer brings the docked panels back after a reload.

import { ILabShell, ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette, MainAreaWidget, WidgetTracker } from "@jupyterlab/apputils";
import { DocumentRegistry } from "@jupyterlab/docregistry";
import { INotebookTracker } from "@jupyterlab/notebook";
import { Widget } from "@lumino/widgets";

import { EngineClient, EnginePanel, TITLES, VIEWS, ViewName } from "./engine";
import { registerViewers } from "./viewers";

import "../style/index.js";

const COMMAND = "mxnb:open-panel";
const PANEL_ID = "mxnb-engine-panel-";

/** The ids of the widgets sharing `id`'s tab bar in the main dock area (the tabs' data-id). */
function tabNeighbours(id: string): string[] {
  const tab = document.querySelector(`.lm-DockPanel-tabBar li[data-id="${CSS.escape(id)}"]`);
  const bar = tab?.closest(".lm-DockPanel-tabBar");
  return bar ? [...bar.querySelectorAll("li[data-id]")].map((li) => (li as HTMLElement).dataset.id || "") : [];
}

/**
 * Documents opened while an engine panel has focus go beside the last document, not among the
 * panels.  JupyterLab's document opener adds a widget "tab-after" the shell's current widget
 * (LabShell._addToMainArea) and the file browser passes no `ref`, so no option of
 * IDocumentManager can say otherwise; instead, a document that first becomes current in a
 * tab bar holding a panel is moved: after the last document used, or left of the panels.
 */
function keepDocumentsOutOfPanels(shell: ILabShell): void {
  let lastDocument: Widget | null = null;
  const seen = new WeakSet<Widget>();
  shell.currentChanged.connect((_, change) => {
    const widget = change.newValue;
    if (!widget || widget.id.startsWith(PANEL_ID)) return;
    const first = !seen.has(widget);
    seen.add(widget);
    const panels = tabNeighbours(widget.id).filter((id) => id.startsWith(PANEL_ID));
    if (first && panels.length) {
      const beside = lastDocument && !lastDocument.isDisposed && lastDocument.isAttached ? lastDocument : null;
      shell.add(widget, "main", beside ? { mode: "tab-after", ref: beside.id } : { mode: "split-left", ref: panels[0] });
      shell.activateById(widget.id);
    }
    if (!tabNeighbours(widget.id).some((id) => id.startsWith(PANEL_ID))) lastDocument = widget;
  });
}

function sidebar(app: JupyterFrontEnd): Widget {
  const widget = new Widget();
  widget.id = "mxnb-engine-sidebar";
  widget.title.caption = "mxnb engine";
  widget.title.label = "mxnb";
  widget.addClass("mxnb-sidebar");
  const head = document.createElement("h2");
  head.textContent = "mxnb engine";
  const note = document.createElement("p");
  note.textContent = "Panels show the engine of the active notebook's kernel, live (after `import mxnb`).";
  widget.node.append(head, note);
  for (const view of VIEWS) {
    const button = document.createElement("button");
    button.textContent = TITLES[view];
    button.dataset.view = view;
    button.addEventListener("click", () => void app.commands.execute(COMMAND, { view }));
    widget.node.append(button);
  }
  return widget;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: "mxnb:plugin",
  description: "mxnb engine panels and MXNet file viewers",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const client = new EngineClient(tracker);
    const opened = new WidgetTracker<MainAreaWidget<EnginePanel>>({ namespace: "mxnb-engine-panels" });
    const notebook7 = app.name === "Jupyter Notebook";
    const panels = new Map<ViewName, MainAreaWidget<EnginePanel>>();
    const docked: MainAreaWidget<EnginePanel>[] = []; // in the order they were docked
    const open = (view: ViewName): MainAreaWidget<EnginePanel> => {
      let panel = panels.get(view);
      if (!panel || panel.isDisposed) {
        const content = new EnginePanel(view, client, (opId) => {
          client.inspect(opId);
          open("inspect");
        });
        panel = new MainAreaWidget({ content });
        panel.id = `mxnb-engine-panel-${view}`;
        panel.title.label = content.title.label;
        panel.title.closable = true;
        panels.set(view, panel);
        void opened.add(panel); // the layout restorer reopens it after a reload
      }
      if (!panel.isAttached && notebook7) {
        app.shell.add(panel, "right", { rank: 900 }); // Notebook 7: one document per page
      } else if (!panel.isAttached) {
        // the first panel docks right of the notebook, the second below it, the next ones
        // as tabs beside the second: each stays large enough to read
        const open = docked.filter((p) => p.isAttached);
        const options: DocumentRegistry.IOpenOptions =
          open.length === 0
            ? { mode: "split-right" }
            : open.length === 1
              ? { mode: "split-bottom", ref: open[0].id }
              : { mode: "tab-after", ref: open[open.length - 1].id };
        app.shell.add(panel, "main", options);
        docked.splice(0, docked.length, ...open, panel);
      }
      app.shell.activateById(panel.id);
      return panel;
    };
    app.commands.addCommand(COMMAND, {
      label: (args) => `mxnb: ${TITLES[(args.view as ViewName) || "dag"]} panel`,
      caption: "an engine panel following the active notebook's kernel",
      execute: (args) => {
        open(((args.view as ViewName) || "dag") as ViewName);
      },
    });
    for (const view of VIEWS) palette?.addItem({ command: COMMAND, args: { view }, category: "mxnb engine" });
    if (restorer) {
      void restorer.restore(opened, {
        command: COMMAND,
        args: (panel) => ({ view: panel.content.view }),
        name: (panel) => panel.content.view,
      });
    }
    app.shell.add(sidebar(app), "left", { rank: 900 });
    registerViewers(app.docRegistry);
    if (!notebook7 && "currentChanged" in app.shell) keepDocumentsOutOfPanels(app.shell as ILabShell);
  },
};

export default plugin;
