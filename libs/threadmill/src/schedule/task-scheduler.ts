import { Inject } from '@nestjs/common';
import { TaskBackend } from '../backend/task-backend.js';
import { InvalidScheduleError } from '../errors/invalid-schedule.error.js';
import { UnknownTaskError } from '../errors/unknown-task.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { EnqueueTargets } from '../queue/enqueue-target.js';
import { findContract } from '../task/task-contract.js';
import { TaskRegistry } from '../task/task.registry.js';
import { THREADMILL_OPTIONS } from '../threadmill.constants.js';
import type { ScheduleInfo, ScheduleUpsert } from '../records/schedule-options.interface.js';
import { scheduleInfo } from './schedule-info.js';
import { encodeSpec } from './schedule-spec.js';

/**
 * Makes, replaces and removes schedules at run time (source `'api'`): runs
 * of a task fired on a cron expression or an interval by the workers, one
 * run per slot (see `docs/schedules.md`). Schedules declared in the code
 * (`@Task({ schedule })`) are listed too; boots never remove the ones made
 * here.
 *
 * @example
 * ```ts
 * await scheduler.upsert('nightly-report', { task: 'reports.build', cron: '0 3 * * *', tz: 'Europe/Berlin' });
 * ```
 */
export class TaskScheduler {
  private readonly targets: EnqueueTargets;

  /** @param registry the tasks a schedule may run: this application's, or those of a contract it defines */
  constructor(
    private readonly registry: TaskRegistry,
    private readonly backend: TaskBackend,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
  ) {
    this.targets = new EnqueueTargets(registry);
  }

  /**
   * Creates schedule `id`, or replaces its definition (its next slot is then
   * planned anew, after the last slot fired). The same definition again
   * changes nothing.
   * @throws InvalidScheduleError for a bad definition; UnknownTaskError for a task this application does not know
   */
  async upsert(id: string, schedule: ScheduleUpsert): Promise<'created' | 'replaced' | 'unchanged'> {
    if (schedule === null || typeof schedule !== 'object') {
      throw new InvalidScheduleError(String(id), 'give the schedule as { task, cron | everyMs, ... }.');
    }
    const { task, args, ...timing } = schedule;
    if (typeof task !== 'string' || (!this.registry.find(task) && !findContract(task))) {
      throw new UnknownTaskError(String(task), this.registry.names());
    }
    const contract = this.registry.find(task) ? undefined : findContract(task);
    const target = contract ? this.targets.resolve({ task: contract, args: [] }) : this.registry.get(task);
    const { spec, def, digest } = encodeSpec(id, timing, args, target, this.options);
    return this.backend.schedules.upsert(id, digest, def, spec.queue);
  }

  /** Removes schedule `id`; false when there was none. A schedule declared in the code comes back when a worker declares it again (within a minute): remove it from the code instead. */
  remove(id: string): Promise<boolean> {
    return this.backend.schedules.remove(id);
  }

  /** Every schedule of the backend, with its next and last run. */
  async list(): Promise<ScheduleInfo[]> {
    return (await this.backend.schedules.list()).map(scheduleInfo);
  }
}
