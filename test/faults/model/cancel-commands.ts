import { startRecorded } from '../../../libs/threadmill/src/rules/lease-rules.js';
import assert from 'node:assert/strict';
import type { Acknowledgement } from '../../../libs/threadmill/src/backend/task-backend.js';
import { overriddenTtl } from '../../../libs/threadmill/src/records/result-ttl.js';
import { acknowledgeInModel, applyClaim, renewInModel, startInModel, type OutcomeKind } from './lease-transitions.js';
import { brokerPass } from './fault-commands.js';
import { OUTCOMES } from './lease-commands.js';
import { ModelCommand, oneOrderOf, shown } from './model-command.js';
import { cancelInModel } from './queue-transitions.js';
import type { ModelRig, Via } from './redis-rig.js';
import {
  CONSUMERS,
  LEASE_TTL_MS,
  leaseRefOf,
  nth,
  PAST_RESULT_TTL_MS,
  QUEUES,
  RESULT_TTLS,
  runsWith,
  taskOf,
  type LeaseRef,
  type ModelRun,
  type QueueName,
  type RunModel,
} from './run-model.js';
import { claimableIds } from './claim-simulation.js';

/**
 * Cancelling from any process (`lua/cancel.lua`): a pending run is withdrawn,
 * a running one's lease revoked, both end CANCELLED; a CANCELLED run answers
 * so, and every other state is refused as it is.
 */

/** Which runs a cancel aims at, in turn: each state it must handle, and any id at all. */
const AIMS: readonly (((run: ModelRun) => boolean) | 'any' | 'retry' | 'started' | 'again')[] = [
  (run) => run.status === 'ready',
  (run) => run.status === 'deferred',
  // A running run whose attempt the test first ends in a retry with a delay: a retry waiting out its backoff.
  'retry',
  (run) => run.status === 'running',
  // A running run whose start the test first records.
  'started',
  // A CANCELLED run; when there is none, the test first cancels a pending or running one.
  'again',
  (run) => run.status === 'successful' || run.status === 'failed' || run.status === 'quarantined',
  'any',
];

/** The acknowledgement a worker sends for `lease`'s attempt ending `kind`, with its task's result TTL. */
function acknowledgementOf(rig: ModelRig, lease: LeaseRef, kind: OutcomeKind): Acknowledgement {
  const outcome = OUTCOMES[kind];
  const declared = rig.harness.registry.find(taskOf(lease.id))!.resultTtlMs;
  return { ...lease, outcome, resultTtlMs: overriddenTtl(declared, outcome.kind) };
}

/** Claims one run, of the first queue that has one to give, so that a cancel has a running run to aim at. */
async function claimOne(model: RunModel, rig: ModelRig): Promise<void> {
  const queue = QUEUES.find((q) => claimableIds(model, q).length > 0);
  if (!queue) return;
  const worker = CONSUMERS[0];
  applyClaim(model, [queue], 1, worker, await rig.backend.claim([queue], 1, worker, 0));
}

const HEARTBEAT = { id: 'host-a:1:0', queues: ['q1', 'q2'], concurrency: 1, startedAt: 0, done: 0, held: 1 };

/**
 * An operator cancels a run; for a running one, its holder then renews
 * (answered `cancelled`) and acknowledges late (discarded as stale), as a
 * worker that had not yet learned of the cancel does.
 */
export class CancelCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly through: Via,
    readonly late: OutcomeKind,
    readonly thenTrimmed = false,
  ) {
    super();
    this.kind = through === 'lost' ? 'cancel, reply lost' : 'cancel';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.ids.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const aim = nth(AIMS, this.pick);
    const n = Math.floor(this.pick / AIMS.length);
    if ((aim === 'retry' || aim === 'started') && runsWith(model, 'running').length === 0) await claimOne(model, rig);
    const running = runsWith(model, 'running');
    if ((aim === 'retry' || aim === 'started') && running.length > 0)
      await this.prepare(model, rig, aim, nth(running, n));
    const live = runsWith(model, 'ready', 'deferred', 'running');
    if (aim === 'again' && runsWith(model, 'cancelled').length === 0 && live.length > 0) {
      const first = nth(live, n);
      const answer = await rig.backend.cancel(first.id, first.queue);
      assert.deepEqual(answer, cancelInModel(model, first.id, first.queue, Date.now()), `cancel of ${shown(first.id)}`);
    }
    const runs =
      aim === 'any'
        ? []
        : aim === 'retry'
          ? runsWith(model, 'deferred').filter((run) => run.charged > 0)
          : aim === 'started'
            ? running
            : aim === 'again'
              ? runsWith(model, 'cancelled')
              : [...model.runs.values()].filter(aim);
    const { id, queue } =
      runs.length > 0 ? nth(runs, n) : { id: nth(model.ids, n), queue: model.runs.get(nth(model.ids, n))?.queue };
    // Every other id of no particular state is named with the other queue: refused as no run of it.
    const other = aim === 'any' && n % 2 === 1;
    const target = other ? QUEUES.find((q) => q !== queue)! : (queue ?? nth(QUEUES, n));
    const before = model.runs.get(id);
    const holder = before?.status === 'running' ? leaseRefOf(before) : undefined;
    const what = !before
      ? 'cancel of an id with no run'
      : other
        ? 'cancel of a run of the other queue'
        : before.status === 'running'
          ? startRecorded(before.lease!.flag)
            ? 'cancel of a started attempt'
            : 'cancel of a held, unstarted run'
          : before.status === 'deferred'
            ? before.charged > 0
              ? 'cancel of a retry waiting out its backoff'
              : 'cancel of a deferred run'
            : `cancel of a ${before.status} run`;
    const answer = await rig.via(this.through, 'cancel', (backend) => backend.cancel(id, target));
    assert.deepEqual(answer, cancelInModel(model, id, target, Date.now()), `cancel of ${shown(id)} in ${target}`);
    rig.tally.note(what);
    if (!answer.cancelled && ['SUCCESSFUL', 'FAILED', 'QUARANTINED'].includes(answer.status)) {
      rig.tally.note('cancel of a finished run refused');
    }
    if (answer.cancelled && this.thenTrimmed) await this.trimmed(model, rig, id, target);
    if (!holder) return;
    // The holder has not heard yet: its renewal learns it, and its late outcome is discarded.
    const renewal = [{ ...holder, leaseTtlMs: LEASE_TTL_MS }];
    const renewed = await rig.backend.renew(HEARTBEAT, 60_000, renewal);
    assert.deepEqual(renewed, renewInModel(model, [holder], Date.now()), `renewal of cancelled ${shown(id)}`);
    const applied = await rig.backend.acknowledge([acknowledgementOf(rig, holder, this.late)]);
    const expected = acknowledgeInModel(model, [{ lease: holder, kind: this.late }], [], Date.now());
    assert.deepEqual(applied, expected, `late ${this.late} of cancelled ${shown(id)}`);
    rig.tally.note('renewal answered cancelled', renewed.filter((state) => state === 'cancelled').length);
    rig.tally.note('late outcome of a cancelled run discarded', expected.filter((ok) => !ok).length);
  }

  /** Ends `run`'s attempt in a retry with a delay (aim 'retry'), or records its start ('started'). */
  private async prepare(model: RunModel, rig: ModelRig, aim: 'retry' | 'started', run: ModelRun): Promise<void> {
    const lease = leaseRefOf(run);
    if (aim === 'started') {
      assert.deepEqual(await rig.backend.acknowledge([], [lease]), []);
      startInModel(model, lease, Date.now());
      return;
    }
    const applied = await rig.backend.acknowledge([acknowledgementOf(rig, lease, 'retry-later')]);
    assert.deepEqual(applied, acknowledgeInModel(model, [{ lease, kind: 'retry-later' }], [], Date.now()));
  }

  /** The cancelled run's result TTL passes: the next broker pass removes it with its index entry. */
  private async trimmed(model: RunModel, rig: ModelRig, id: string, queue: QueueName): Promise<void> {
    const past = RESULT_TTLS.failed + PAST_RESULT_TTL_MS;
    const run = model.runs.get(id)!;
    const score = Number(await rig.client.zscore(rig.backend.keys.cancelled(queue), id));
    await rig.setScore(queue, 'cancelled', id, score - past);
    run.finishedAt! -= past;
    await brokerPass(model, rig);
  }

  toString(): string {
    return `cancel[${this.through}](#${this.pick}, then late ${this.late}${this.thenTrimmed ? ', then trimmed' : ''})`;
  }
}

/**
 * A cancel races its run's acknowledgement, from two processes: the run ends
 * either as the outcome says (the cancel then finds it finished, or a retry
 * READY and cancels that) or CANCELLED (the outcome then stale), never both,
 * never lost.
 */
export class CancelRaceCommand extends ModelCommand {
  protected readonly kind = 'cancel racing an acknowledgement';

  constructor(
    readonly pick: number,
    readonly outcome: OutcomeKind,
    readonly operatorFirst: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'running').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const lease = leaseRefOf(nth(runsWith(model, 'running'), this.pick));
    const [operator, worker] = this.operatorFirst ? [rig.backend, rig.lossy] : [rig.lossy, rig.backend];
    const [answer, applied] = await Promise.all([
      operator.cancel(lease.id, lease.queue),
      worker.acknowledge([acknowledgementOf(rig, lease, this.outcome)]),
    ]);
    const now = Date.now();
    const outcomes = [{ lease, kind: this.outcome }];
    const order = oneOrderOf(model, {
      'cancel, then acknowledge': (copy) => {
        assert.deepEqual(answer, cancelInModel(copy, lease.id, lease.queue, now));
        assert.deepEqual(applied, acknowledgeInModel(copy, outcomes, [], now));
      },
      'acknowledge, then cancel': (copy) => {
        assert.deepEqual(applied, acknowledgeInModel(copy, outcomes, [], now));
        assert.deepEqual(answer, cancelInModel(copy, lease.id, lease.queue, now));
      },
    });
    rig.tally.note(`${this.kind}: ${order}`);
  }

  toString(): string {
    return `cancelRace(#${this.pick}, ${this.outcome}, ${this.operatorFirst ? 'operator' : 'worker'} first)`;
  }
}
