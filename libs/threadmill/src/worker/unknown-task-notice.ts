import { Logger } from '@nestjs/common';

/**
 * Says, once per task and process, that this worker was handed runs of a
 * task it does not register. Such runs are quarantined (reason
 * `unknown-task`) one by one, which the log did not show: a worker whose
 * module forgot to import the tasks' module quarantined every run it claimed
 * in silence. Once per task, not per run: the runs are counted in
 * `threadmill_unknown_task_runs_total`.
 */
export class UnknownTaskNotice {
  private readonly told = new Set<string>();

  constructor(private readonly logger = new Logger('Threadmill')) {}

  /**
   * A run of `task`, on `queue`, reached this process, which registers
   * `registered` tasks and not this one.
   */
  unknown(task: string, queue: string, registered: number): void {
    if (this.told.has(task)) return;
    this.told.add(task);
    this.logger.warn(
      `Runs of task "${task}" (queue "${queue}") reach this worker, which does not register it ` +
        `(it registers ${registered} task(s)): each is quarantined (reason unknown-task). Import the module that ` +
        `provides "${task}" (its @Task() provider, or the controller of its handler) into the worker's module, ` +
        "then requeue the quarantined runs (TaskInspector.requeueAll(queue, 'quarantined'), the dashboard or " +
        '`npx threadmill inspect`). Logged once per task; threadmill_unknown_task_runs_total counts the runs.',
    );
  }
}
