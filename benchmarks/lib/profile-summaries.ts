/**
 * Summaries of V8 profiles for the profiling tools: a CPU profile's self
 * time per function and per area, and a sampling heap profile's bytes per
 * run per allocating function.
 */

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

/** A `.cpuprofile` (`node --cpu-prof`). */
export interface CpuProfile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: CallFrame; readonly children?: number[] }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** A sampling heap profile (`HeapProfiler.stopSampling`). */
export interface HeapProfile {
  readonly head: HeapNode;
}

interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

/** `function file:line`, the file as its last two path segments. */
function frameKey({ functionName, url, lineNumber }: CallFrame): string {
  return `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
}

/** `us` as a percentage of `of`, padded to one width. */
const share = (us: number, of: number) => `${((us / of) * 100).toFixed(1).padStart(5)}%`;

/** Entries of `totals`, largest first. */
const largest = (totals: Map<string, number>, top = Infinity) => [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);

/**
 * Self time per function, the `top` largest as a share of the profile, then
 * busy time (idle left out) by area: GC, ioredis, Nest, the library's
 * folders, the benchmark harness, Node. With `window` (a function name),
 * only the samples from the first to the last whose stack holds that
 * function count (`record`: the drain, without the process's boot and
 * shutdown).
 */
export function summariseCpuProfile(profile: CpuProfile, top: number, window?: string): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const holds = (id: number, name: string) => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      if (byId.get(at)?.callFrame.functionName === name) return true;
    }
    return false;
  };
  let samples = profile.samples;
  let deltas = profile.timeDeltas;
  if (window) {
    const inside = samples.map((id) => holds(id, window));
    const from = inside.indexOf(true);
    const to = inside.lastIndexOf(true);
    samples = samples.slice(from, to + 1);
    deltas = deltas.slice(from, to + 1);
  }
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const dt = deltas[i] ?? 0;
    const key = frameKey(frame);
    self.set(key, (self.get(key) ?? 0) + dt);
    const area = areaOf(frame);
    if (area) areas.set(area, (areas.get(area) ?? 0) + dt);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const busy = [...areas.values()].reduce((a, b) => a + b, 0);
  return [
    ...largest(self, top).map(([key, us]) => `${share(us, total)}  ${key}`),
    '',
    'busy time by area:',
    ...largest(areas).map(([area, us]) => `${share(us, busy)}  ${area}`),
  ].join('\n');
}

/** Where a sample's time goes by package or area; undefined for idle. */
function areaOf({ functionName, url }: CallFrame): string | undefined {
  if (functionName === '(idle)') return undefined;
  if (functionName === '(garbage collector)') return 'GC';
  if (/ioredis/.test(url)) return 'ioredis';
  if (/@nestjs/.test(url)) return 'nest';
  if (/prom-client/.test(url)) return 'prom-client';
  if (/threadmill\/dist/.test(url)) return 'threadmill: ' + url.split('/dist/')[1]!.split('/')[0];
  if (/benchmarks/.test(url)) return 'bench harness';
  if (url.startsWith('node:') || url === '') return 'node (internals/native)';
  return 'other';
}

/**
 * Bytes allocated per run (one of `runs`) over the whole profile, then per
 * function for the `top` that allocated most. `survivors` names the total as
 * what survived a scavenge (a profile sampled with `HEAP=survivors`).
 */
export function summariseHeapProfile(profile: HeapProfile, runs: number, top: number, survivors = false): string {
  const self = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode): void => {
    total += node.selfSize;
    if (node.selfSize > 0)
      self.set(frameKey(node.callFrame), (self.get(frameKey(node.callFrame)) ?? 0) + node.selfSize);
    node.children.forEach(visit);
  };
  visit(profile.head);
  const what = survivors ? 'survived a scavenge' : 'allocated';
  return [
    `${what}: ${(total / 2 ** 20).toFixed(1)} MB, ${Math.round(total / runs)} bytes per run`,
    ...largest(self, top).map(([key, bytes]) => `${String(Math.round(bytes / runs)).padStart(6)}  ${key}`),
  ].join('\n');
}
