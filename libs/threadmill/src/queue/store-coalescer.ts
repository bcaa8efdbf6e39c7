import type { NewRun, StoreOutcome, TaskBackend } from '../backend/task-backend.js';

interface Request {
  readonly runs: readonly NewRun[];
  readonly resolve: (outcome: StoreOutcome) => void;
  readonly reject: (error: unknown) => void;
}

/** Most runs one coalesced store carries (a single larger request still goes whole). */
const MAX_RUNS = 1_000;

/**
 * Coalesces the stores issued in one tick (concurrent single enqueues, say)
 * into one script call, the way ioredis pipelines commands: a script call has
 * a fixed cost that a batch shares. Each request keeps its own outcome, and
 * is never split, so an `enqueueMany` stays atomic.
 */
export class StoreCoalescer {
  private pending: Request[] = [];

  constructor(private readonly backend: TaskBackend) {}

  store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ runs, resolve, reject }) === 1) process.nextTick(() => this.flush());
    });
  }

  private flush(): void {
    const requests = this.pending;
    this.pending = [];
    let chunk: Request[] = [];
    let size = 0;
    for (const request of requests) {
      if (chunk.length > 0 && size + request.runs.length > MAX_RUNS) {
        this.send(chunk);
        chunk = [];
        size = 0;
      }
      chunk.push(request);
      size += request.runs.length;
    }
    if (chunk.length > 0) this.send(chunk);
  }

  private send(requests: Request[]): void {
    const runs = requests.length === 1 ? requests[0]!.runs : requests.flatMap((r) => r.runs);
    this.backend.store(runs).then(
      ({ now, created }) => {
        let offset = 0;
        for (const request of requests) {
          request.resolve({ now, created: created.slice(offset, offset + request.runs.length) });
          offset += request.runs.length;
        }
      },
      (error: unknown) => {
        for (const request of requests) request.reject(error);
      },
    );
  }
}
