import type { ProducerStore } from '../backend/backend-roles.js';
import type { NewRun, StoreOutcome } from '../backend/task-backend.js';
import { UnconfirmedEnqueueError } from '../errors/unconfirmed-enqueue.error.js';

interface Request {
  readonly runs: readonly NewRun[];
  readonly resolve: (outcome: StoreOutcome) => void;
  readonly reject: (error: unknown) => void;
}

/** Most runs one coalesced store carries (a single larger request still goes whole). */
const MAX_RUNS = 1_000;

/** Fewest runs in each half of a flush that is split to start a pipeline. */
const MIN_HALF = 16;

/**
 * Coalesces the stores issued in one tick (concurrent single enqueues, say)
 * into one script call, the way ioredis pipelines commands: a script call has
 * a fixed cost that a batch shares. Each request keeps its own outcome, and
 * is never split, so an `enqueueMany` stays atomic.
 *
 * A flush while no store is in flight goes out as two calls, each with half
 * the requests. Callers that await their enqueue and then enqueue again
 * (a loop, a stream of requests) resume together when their call's reply
 * comes back, and enqueue again in one tick: with one call for all of them,
 * the producer and Redis would take turns, each idle while the other works.
 * Two halves keep two cohorts that alternate: Redis stores one while the
 * producer prepares the other (callers in a loop enqueue faster, for a little
 * more Redis time per run: docs/optimisations.md, step 36).
 * Later flushes, with a call in flight, go out whole.
 */
export class StoreCoalescer {
  private pending: Request[] = [];
  private inFlight = 0;

  constructor(private readonly backend: ProducerStore) {}

  store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ runs, resolve, reject }) === 1) process.nextTick(() => this.flush());
    });
  }

  private flush(): void {
    const requests = this.pending;
    this.pending = [];
    let total = 0;
    for (const request of requests) total += request.runs.length;
    const limit =
      this.inFlight === 0 && requests.length > 1 && total >= 2 * MIN_HALF
        ? Math.min(MAX_RUNS, Math.ceil(total / 2))
        : MAX_RUNS;
    let chunk: Request[] = [];
    let size = 0;
    for (const request of requests) {
      if (chunk.length > 0 && size + request.runs.length > limit) {
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
    this.inFlight++;
    this.backend.store(runs).then(
      (outcome) => {
        this.inFlight--;
        let offset = 0;
        for (const request of requests) {
          const end = offset + request.runs.length;
          request.resolve(share(outcome, offset, end));
          offset = end;
        }
      },
      (error: unknown) => {
        this.inFlight--;
        if (!(error instanceof UnconfirmedEnqueueError) || !error.outcome || requests.length === 1) {
          for (const request of requests) request.reject(error);
          return;
        }
        // Each request is told about its own runs only: a request whose runs
        // were all confirmed (their partitions' masters confirmed) resolves.
        let offset = 0;
        for (const request of requests) {
          const end = offset + request.runs.length;
          const unconfirmed = error.share(offset, end);
          if (unconfirmed) request.reject(unconfirmed);
          else request.resolve(share(error.outcome, offset, end));
          offset = end;
        }
      },
    );
  }
}

/** What a coalesced store did with the runs of one request: items `start` to `end` (exclusive). */
function share({ now, created, deduplicated }: StoreOutcome, start: number, end: number): StoreOutcome {
  const mine = deduplicated?.slice(start, end);
  return mine?.some((id) => id !== undefined)
    ? { now, created: created.slice(start, end), deduplicated: mine }
    : { now, created: created.slice(start, end) };
}
