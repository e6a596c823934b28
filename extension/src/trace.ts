// A chrome trace (mx.engine.trace's, or a whole distributed job's from ClusterTrace) turned
// into the timeline data canvas.js draws (as Python's Timeline.to_data()).
//
// Lanes are keyed by (pid, tid): the threads of different processes never share a lane.  In a
// trace of several processes every lane carries its process's name as `group` (canvas.js draws
// one labelled band per process) and op ids are made unique per process.  Bars are the "X"
// events of category op (engine ops), wait (a thread blocked in the engine) and kvstore (a
// job's push / update / pull); arrows are the flow events: "s" starts one, "t" steps it on,
// "f" ends it; each leg joins the bars under its two ends.

type Json = any;

/** Op ids of process `pid` in a multi-process trace: pid * OFFSET + id (as ClusterTrace.trace). */
const OFFSET = 10_000_000;
/** kvstore slices get ids after every op id of their process. */
const KV_BASE = 5_000_000;

interface Lane {
  name: string;
  kind: string;
  device: string;
  group?: string;
  pid: number;
  tid: number;
  bars: Json[];
}

function metadata(events: Json[]): { processes: Map<number, string>; threads: Map<string, string> } {
  const processes = new Map<number, string>();
  const threads = new Map<string, string>();
  for (const e of events) {
    if (e.ph !== "M") continue;
    if (e.name === "process_name") processes.set(e.pid ?? 0, e.args.name);
    if (e.name === "thread_name") threads.set(`${e.pid ?? 0}:${e.tid}`, e.args.name);
  }
  return { processes, threads };
}

const KIND_ORDER: Record<string, number> = { kvstore: 0, wait: 1, worker: 2 };

/** Timeline data of a chrome trace: lanes by (pid, tid), process groups, bars and arrows. */
export function traceToTimeline(trace: Json): Json {
  const events: Json[] = Array.isArray(trace) ? trace : trace.traceEvents || [];
  const { processes, threads } = metadata(events);
  const pids = new Set<number>();
  for (const e of events) if (e.ph === "X") pids.add(e.pid ?? 0);
  const multi = pids.size > 1;
  const processName = (pid: number) => processes.get(pid) || `process ${pid}`;
  const lanes = new Map<string, Lane>();
  const lane = (pid: number, tid: number, kind: string): Lane => {
    const key = `${pid}:${tid}`;
    if (!lanes.has(key)) {
      const name = threads.get(key) || `lane ${tid}`;
      const entry: Lane = { name, kind, device: name.split("/")[0], pid, tid, bars: [] };
      if (multi) {
        entry.group = processName(pid);
        entry.device = `${entry.group} ${entry.device}`;
      }
      lanes.set(key, entry);
    }
    return lanes.get(key) as Lane;
  };
  const opId = (pid: number, id: number) => (multi ? pid * OFFSET + id : id);
  const kvCount = new Map<number, number>();
  let first = Infinity;
  let last = -Infinity;
  let ops = 0;
  let kvstore = 0;
  for (const e of events) {
    if (e.ph !== "X") continue;
    const pid = e.pid ?? 0;
    const start = e.ts / 1000;
    const end = (e.ts + (e.dur || 0)) / 1000;
    first = Math.min(first, start);
    last = Math.max(last, end);
    if (e.cat === "op") {
      ops += 1;
      const error = e.args && e.args.error;
      const id = e.args && e.args.op_id !== undefined ? opId(pid, e.args.op_id) : null;
      lane(pid, e.tid, "worker").bars.push([id, start, end, e.name, error ? "failed" : "done", error || null]);
    } else if (e.cat === "wait") {
      lane(pid, e.tid, "wait").bars.push([null, start, end, e.name, "wait", null]);
    } else if (e.cat === "kvstore") {
      kvstore += 1;
      const k = kvCount.get(pid) || 0;
      kvCount.set(pid, k + 1);
      lane(pid, e.tid, "kvstore").bars.push([opId(pid, KV_BASE + k), start, end, e.name, "done", null]);
    }
  }
  const flows = flowArrows(events, lanes);
  const ordered = [...lanes.values()].sort(
    (a, b) => a.pid - b.pid || (KIND_ORDER[a.kind] ?? 3) - (KIND_ORDER[b.kind] ?? 3) || a.tid - b.tid
  );
  if (!isFinite(first)) {
    first = 0;
    last = 1;
  }
  const workers = ordered.filter((l) => l.kind === "worker").length;
  const title = multi
    ? `job trace: ${pids.size} processes, ${ops} engine ops, ${kvstore} kvstore events`
    : `engine trace: ${ops} ops, ${workers} workers`;
  return { title, span: [first, last], lanes: ordered, critical: [], flows };
}

/** [from op id, to op id, label] for each leg of the flow events ("s" -> "t"... -> "f"). */
function flowArrows(events: Json[], lanes: Map<string, Lane>): Json[] {
  // the bar under time `ms` on the lane of (pid, tid): the latest one starting at or before it
  const opAt = (pid: number, tid: number, ms: number): number | null => {
    const bars = lanes.get(`${pid ?? 0}:${tid}`)?.bars || [];
    let best: Json = null;
    for (const b of bars) {
      if (b[0] !== null && b[1] <= ms + 1e-6 && ms <= b[2] + 1e-6 && (!best || b[1] > best[1])) best = b;
    }
    return best ? best[0] : null;
  };
  const open = new Map<string, Json>(); // flow key -> its last point
  const flows: Json[] = [];
  for (const e of events) {
    if (e.ph !== "s" && e.ph !== "t" && e.ph !== "f") continue;
    const key = `${e.cat}|${e.id}`;
    if (e.ph === "s") {
      open.set(key, e);
      continue;
    }
    const from = open.get(key);
    if (!from) continue;
    const holder = opAt(from.pid, from.tid, from.ts / 1000);
    const waiter = opAt(e.pid, e.tid, e.ts / 1000);
    if (holder !== null && waiter !== null && holder !== waiter) flows.push([holder, waiter, e.name]);
    if (e.ph === "t") open.set(key, e);
    else open.delete(key);
  }
  return flows;
}
