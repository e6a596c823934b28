// Shapes a symbol JSON carries or implies, for the symbol viewer's labels (issue 39 item 13).
//
// MXNet writes an unknown axis as 0 ("(0,)", "(0, 200)"): such a shape is shown as "?" per
// unknown axis, and one with no known axis not at all.  Shapes are inferred forward from the
// inputs' `__shape__` attributes (and `_zeros` / `_ones` nodes' `shape`) through the common
// layers (FullyConnected, Convolution, Pooling, Flatten, and the ops that keep their input's
// shape); an op outside that list, or an input of unknown shape, leaves its output unknown.
// Only each node's first output is tracked: a multi-output op's edges carry no label.

type Json = any;
type Shape = number[]; // 0: an unknown axis

/** "(1, 3, 224, 224)" -> [1, 3, 224, 224]; null when the text is not a shape. */
export function parseShape(text: string | undefined): Shape | null {
  if (!text) return null;
  const match = /^\s*[([]\s*([\d\s,]*)[)\]]\s*$/.exec(text);
  if (!match) return null;
  const axes = match[1].split(",").map((s) => s.trim()).filter((s) => s !== "");
  return axes.map(Number);
}

/** How a shape is shown: unknown axes as "?", nothing at all when no axis is known. */
export function showShape(shape: Shape | null): string {
  if (!shape || !shape.length || shape.every((d) => !d)) return "";
  return `(${shape.map((d) => (d ? String(d) : "?")).join(", ")})`;
}

const KEEPS_SHAPE = new Set([
  "Activation", "relu", "sigmoid", "tanh", "LeakyReLU", "Dropout", "BatchNorm", "LRN",
  "SoftmaxOutput", "softmax", "log_softmax", "SoftmaxActivation", "LinearRegressionOutput",
  "LogisticRegressionOutput", "elemwise_add", "elemwise_sub", "elemwise_mul", "_plus", "_minus",
  "_mul", "_Plus", "_Minus", "_Mul", "broadcast_add", "_copy", "identity", "BlockGrad",
  "_plus_scalar", "_minus_scalar", "_mul_scalar", "_div_scalar", "clip", "exp", "log", "sqrt",
  "square", "abs", "negative",
]);

function tuple(attrs: Record<string, string>, key: string, rank: number, fill: number): number[] {
  const parsed = parseShape(attrs[key]);
  return parsed && parsed.length === rank ? parsed : new Array(rank).fill(fill);
}

/** Convolution / Pooling output axes: MXNet's (x + 2 pad - dilate (k - 1) - 1) / stride + 1. */
function window(input: Shape, attrs: Record<string, string>, channels: number, pooling: boolean): Shape | null {
  const spatial = input.slice(2);
  if (pooling && attrs.global_pool === "True") return [input[0], input[1], ...spatial.map(() => 1)];
  const kernel = parseShape(attrs.kernel);
  if (!kernel || kernel.length !== spatial.length) return null;
  const stride = tuple(attrs, "stride", kernel.length, 1);
  const pad = tuple(attrs, "pad", kernel.length, 0);
  const dilate = tuple(attrs, "dilate", kernel.length, 1);
  const full = pooling && attrs.pooling_convention === "full";
  const out = spatial.map((x, i) => {
    if (!x) return 0;
    const span = x + 2 * pad[i] - dilate[i] * (kernel[i] - 1) - 1;
    return (full ? Math.ceil(span / stride[i]) : Math.floor(span / stride[i])) + 1;
  });
  return [input[0], channels, ...out];
}

function layerShape(op: string, attrs: Record<string, string>, input: Shape | undefined): Shape | null {
  if (!input) return null;
  if (KEEPS_SHAPE.has(op)) return input;
  const product = (axes: Shape) => (axes.every((d) => d) ? axes.reduce((a, b) => a * b, 1) : 0);
  switch (op) {
    case "FullyConnected": {
      const hidden = Number(attrs.num_hidden);
      if (!hidden) return null;
      return attrs.flatten === "False" ? [...input.slice(0, -1), hidden] : [input[0], hidden];
    }
    case "Convolution":
      return input.length >= 3 ? window(input, attrs, Number(attrs.num_filter) || 0, false) : null;
    case "Pooling":
      return input.length >= 3 ? window(input, attrs, input[1], true) : null;
    case "Flatten":
    case "flatten":
      return [input[0], product(input.slice(1))];
    default:
      return null;
  }
}

/** Node index -> the shape of its first output, where the JSON carries or implies one. */
export function inferShapes(nodes: Json[], attrsOf: (node: Json) => Record<string, string>): Map<number, Shape> {
  const shapes = new Map<number, Shape>();
  nodes.forEach((node, i) => {
    const attrs = attrsOf(node);
    let shape: Shape | null = null;
    if (node.op === "null") shape = parseShape(attrs.__shape__);
    else if (node.op === "_zeros" || node.op === "_ones") shape = parseShape(attrs.shape);
    else {
      const first = (node.inputs || [])[0];
      const input = first && first[1] === 0 ? shapes.get(first[0]) : undefined;
      shape = layerShape(node.op, attrs, input);
    }
    if (shape && showShape(shape)) shapes.set(i, shape);
  });
  return shapes;
}
