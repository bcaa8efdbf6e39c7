import { appendFileSync } from 'node:fs';

/** One scenario's figures, as docs/reliability.md shows them. */
export interface FaultReport {
  readonly scenario: string;
  /** Runs whose enqueue Redis confirmed. */
  readonly runs: number;
  /** Faults injected, described. */
  readonly faults: string;
  /**
   * Confirmed runs that did not end SUCCESSFUL (nor, for the task without a
   * retry policy, FAILED by the SIGKILL of an attempt that had started).
   */
  readonly lost: number;
  /** Executions beyond the first, summed over runs. */
  readonly duplicates: number;
  /** What the duplicates must stay within (runs in flight at the faults), when it applies. */
  readonly duplicateBound?: number;
  /** Handler starts the witness counted, summed over runs, where the scenario compares them with `charged`. */
  readonly started?: number;
  /** Attempts Redis charged the runs (their final `attempts`), summed. */
  readonly charged?: number;
  readonly notes: string;
}

/** Appends a scenario's figures to the report file named by FAULTS_REPORT, if any. */
export function report(entry: FaultReport): void {
  const file = process.env['FAULTS_REPORT'];
  console.log(`[faults] ${JSON.stringify(entry)}`);
  if (file) appendFileSync(file, `${JSON.stringify({ ...entry, at: new Date().toISOString() })}\n`);
}
