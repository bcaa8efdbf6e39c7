import assert from 'node:assert/strict';
import type { RunReport } from '../../../libs/threadmill/src/backend/task-backend.js';
import { reportInModel, type ModelReport } from './lease-transitions.js';
import { ModelCommand, shown } from './model-command.js';
import type { LeasePick } from './lease-commands.js';
import type { ModelRig, Via } from './redis-rig.js';
import { currentLeases, nth, TASK_ONCE, taskOf, type RunModel } from './run-model.js';

/** What one item of a report carries: progress or not, and how many lines. */
export interface ReportSpec extends LeasePick {
  readonly progress: boolean;
  readonly lines: number;
  /** A waiter registers the run first (if its lease is current), so its report must be published. */
  readonly watched: boolean;
}

/** As long as a watch step registers for: no step of a sequence outlives it. */
const REGISTRATION_MS = 10 * 60_000;

/** Every report of a sequence numbers its lines apart, so a line appended twice or lost shows. */
let reportNumber = 0;

/**
 * Running attempts report progress and log lines (`context.progress`,
 * `context.log`) in one call: each item is stored while its lease holds,
 * refused otherwise, and a resent copy after a lost reply writes nothing
 * twice. Its first report moves a fresh run to its run hash.
 */
export class ReportCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly items: readonly ReportSpec[],
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'report, reply lost' : 'report';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const n = ++reportNumber;
    const reports: ModelReport[] = this.items.map((item, i) => {
      const current = currentLeases(model);
      const lease = item.stale || current.length === 0 ? nth(model.leases, item.pick) : nth(current, item.pick);
      const lines = Array.from({ length: item.lines }, (_, l) => `r${n}.${i} line ${l} | ${'·'.repeat(l % 3)}`);
      return item.progress ? { lease, progress: `{"report":${n},"item":${i}}`, lines } : { lease, lines };
    });
    for (const [i, { lease }] of reports.entries()) {
      if (!this.items[i]!.watched || model.watched.has(lease.id) || model.runs.get(lease.id)?.status !== 'running') {
        continue;
      }
      // As `waitFor` registers (watch-commands.ts): a running run is pending.
      const { states } = await rig.backend.watch([lease.id], REGISTRATION_MS);
      assert.equal(states[0], null, `watch of running ${shown(lease.id)}`);
      model.watched.add(lease.id);
    }
    const calls: RunReport[] = reports.map(({ lease, progress, lines }) =>
      progress === undefined ? { ...lease, lines } : { ...lease, progress, lines },
    );
    const stored = await rig.via(this.through, 'report', (backend) => backend.report(calls));
    const expected = reportInModel(model, reports, Date.now());
    const what = reports.map(({ lease }) => `${shown(lease.id)}/${lease.token}`).join(', ');
    assert.deepEqual(stored, expected, `stored, of reports of ${what}`);
    rig.tally.note('report stored', expected.filter(Boolean).length);
    rig.tally.note('report refused (lease gone)', expected.filter((ok) => !ok).length);
    const once = reports.filter(({ lease }, i) => expected[i] && taskOf(lease.id) === TASK_ONCE);
    rig.tally.note('report stored on a run of the non-retrying task', once.length);
  }

  toString(): string {
    const items = this.items.map((r) => `#${r.pick}${r.stale ? '?' : ''}${r.progress ? '+p' : ''}x${r.lines}`);
    return `report[${this.through}](${items.join(' ')})`;
  }
}
