// An MXNet / mxnb symbol JSON as Graphviz DOT, at a level of detail the browser can lay out.
//
// Graphviz's layout grows much faster than the node count: LeNet, ResNet-18 and Inception-v3
// (up to a few hundred drawn nodes) lay out in about a second, the 969-node unrolled LSTM
// of notebook 11 not in minutes.  So no more than NODE_LIMIT nodes are ever drawn:
//   - parameter variables (`*_weight`, `*_bias`, BatchNorm's `*_gamma`, `*_beta`,
//     `*_moving_mean`, `*_moving_var`) are hidden, as mx.viz.plot_network hides them;
//   - if that is not enough, ops are grouped by name prefix (`lstm_l0_t3_i2h` and
//     `lstm_l0_t3_c` into `lstm_l0_t3_*`), one prefix level more until few enough groups
//     remain; an op with a generated name (`_plus0`, `activation12`) joins the group of its
//     first input op.  A group is one box with its op counts; the edges between groups stay.
// A small graph is drawn whole (every node, parameters included) unless asked otherwise.
// Edges carry the shapes the JSON carries or implies (./shapes.ts): unknown axes as "?".

import { inferShapes, parseShape, showShape } from "./shapes";

type Json = any;

/** The most nodes handed to Graphviz in the browser. */
export const NODE_LIMIT = 400;

const PARAM = /_(weight|bias|gamma|beta|moving_mean|moving_var|running_mean|running_var)$/;
const GENERATED = /^_*[a-z]+(_[a-z]+)*\d+$/i;

export interface Detail {
  /** draw parameter variables */
  params: boolean;
  /** group ops by name prefix */
  group: boolean;
}

export interface SymbolDot {
  dot: string;
  tooltips: Record<string, string>;
  /** nodes in the JSON */
  count: number;
  /** boxes drawn (a group counts once) */
  drawn: number;
  /** nodes hidden or folded into groups */
  folded: number;
  detail: Detail;
}

function dotString(text: string): string {
  return `"${String(text).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

function nodeAttrs(node: Json): Record<string, string> {
  return { ...(node.param || {}), ...(node.attr || {}), ...(node.attrs || {}) };
}

function isParam(node: Json): boolean {
  return node.op === "null" && PARAM.test(node.name);
}

/** The level of detail drawn by default: everything, unless that is over NODE_LIMIT. */
export function defaultDetail(symbol: Json): Detail {
  const nodes: Json[] = symbol.nodes || [];
  if (nodes.length <= NODE_LIMIT) return { params: true, group: false };
  const shown = nodes.filter((n) => !isParam(n)).length;
  return { params: false, group: shown > NODE_LIMIT };
}

/** Whether `detail` keeps the drawing within NODE_LIMIT (the viewer refuses the rest). */
export function fits(symbol: Json, detail: Detail): boolean {
  if (detail.group) return true;
  const nodes: Json[] = symbol.nodes || [];
  return nodes.filter((n) => detail.params || !isParam(n)).length <= NODE_LIMIT;
}

/** The prefix of `name` with `depth` trailing `_` parts cut off (the name itself if too short). */
function prefix(name: string, depth: number): string {
  const parts = name.split("_");
  const words = parts.filter((p) => p).length;
  return words > depth ? parts.slice(0, parts.length - depth).join("_") : name;
}

/** Group key per shown node index, grouping at `depth` prefix levels. */
function groupKeys(nodes: Json[], shown: Set<number>, depth: number): Map<number, string> {
  const keys = new Map<number, string>();
  nodes.forEach((node, i) => {
    if (!shown.has(i)) return;
    if (node.op === "null") {
      keys.set(i, `var ${node.name}`); // inputs stay single
      return;
    }
    // a generated name joins the group of its first input op, unless its inputs come from
    // more than two groups (a Concat of every time step keeps a box of its own)
    const from = (node.inputs || []).map((input: number[]) => input[0]).filter((j: number) => keys.has(j));
    const ops = from.filter((j: number) => nodes[j].op !== "null");
    const groups = new Set(ops.map((j: number) => keys.get(j)));
    if (GENERATED.test(node.name) && ops.length && groups.size <= 2) keys.set(i, keys.get(ops[0]) as string);
    else keys.set(i, prefix(node.name, depth));
  });
  return keys;
}

/** The group of every shown node: by prefix, one level deeper until at most NODE_LIMIT groups. */
function grouping(nodes: Json[], shown: Set<number>): Map<number, string> {
  let keys = groupKeys(nodes, shown, 1);
  for (let depth = 2; new Set(keys.values()).size > NODE_LIMIT && depth <= 6; depth += 1) {
    keys = groupKeys(nodes, shown, depth);
  }
  return keys;
}

function nodeLine(node: Json, i: number, attrs: Record<string, string>, tip: string): string {
  const variable = node.op === "null";
  const shape = showShape(parseShape(attrs.__shape__)); // "(0,)": unknown, not shown
  const label = variable ? `${node.name}${shape ? `\n${shape}` : ""}` : `${node.name}\n${node.op}`;
  const style = variable
    ? 'shape=ellipse, style="filled", fillcolor="#fff7e0", fontsize=9'
    : 'shape=box, fillcolor="#8ec5ff"';
  return `n${i} [id="op${i}", label=${dotString(label)}, tooltip=${dotString(tip)}, ${style}];`;
}

function groupLine(key: string, members: number[], nodes: Json[]): { line: string; tip: string } {
  const counts = new Map<string, number>();
  for (const i of members) counts.set(nodes[i].op, (counts.get(nodes[i].op) || 0) + 1);
  const ops = [...counts].sort((a, b) => b[1] - a[1]).map(([op, n]) => `${op} x${n}`);
  const tip = [`${key}_* : ${members.length} ops (grouped by name prefix)`, ...ops].join("\n");
  const label = `${key}_*\n${members.length} ops`;
  const line = `n${members[0]} [id="op${members[0]}", label=${dotString(label)}, tooltip=${dotString(tip)}, shape=box3d, fillcolor="#cfe3ff"];`;
  return { line, tip };
}

/** DOT of a symbol JSON (MXNet's `nodes` / `heads` layout, mxnb writes the same) at `detail`. */
export function symbolToDot(symbol: Json, detail: Detail = defaultDetail(symbol)): SymbolDot {
  const nodes: Json[] = symbol.nodes || [];
  const lines = [
    "digraph symbol {",
    'rankdir=BT; fontname="Helvetica"; nodesep=0.25; ranksep=0.35;',
    'node [fontname="Helvetica", fontsize=10, style="rounded,filled"];',
    'edge [fontname="Helvetica", fontsize=8, arrowsize=0.6, color="#555555"];',
  ];
  const shown = new Set<number>();
  nodes.forEach((node, i) => {
    if (detail.params || !isParam(node)) shown.add(i);
  });
  const keys = detail.group ? grouping(nodes, shown) : new Map([...shown].map((i) => [i, `#${i}`]));
  const members = new Map<string, number[]>();
  for (const [i, key] of keys) members.set(key, [...(members.get(key) || []), i]);
  const box = new Map<number, number>(); // node index -> index of the node its box is named after
  const tooltips: Record<string, string> = {};
  const shapes = inferShapes(nodes, nodeAttrs); // node -> its first output's shape, where known
  for (const [key, group] of members) {
    for (const i of group) box.set(i, group[0]);
    if (group.length > 1) {
      const { line, tip } = groupLine(key, group, nodes);
      tooltips[`op${group[0]}`] = tip;
      lines.push(line);
      continue;
    }
    const i = group[0];
    const node = nodes[i];
    const attrs = nodeAttrs(node);
    const shape = showShape(shapes.get(i) || null);
    const tip = [`${node.name} (${node.op === "null" ? "variable" : node.op})`]
      .concat(Object.entries(attrs).filter(([k]) => k !== "__shape__").map(([k, v]) => `${k} = ${v}`))
      .concat(shape ? [`shape = ${shape}`] : [])
      .join("\n");
    tooltips[`op${i}`] = tip;
    lines.push(nodeLine(node, i, attrs, tip));
  }
  const edges = new Set<string>();
  nodes.forEach((node, i) => {
    for (const input of node.inputs || []) {
      const source = input[0];
      const from = box.get(source);
      const to = box.get(i);
      if (from === undefined || to === undefined || from === to || edges.has(`${from}>${to}`)) continue;
      edges.add(`${from}>${to}`);
      const shape = from === source && input[1] === 0 ? showShape(shapes.get(source) || null) : "";
      lines.push(`n${from} -> n${to}${shape ? ` [label=${dotString(shape)}]` : ""};`);
    }
  });
  lines.push("}");
  return { dot: lines.join("\n"), tooltips, count: nodes.length, drawn: members.size, folded: nodes.length - members.size, detail };
}
