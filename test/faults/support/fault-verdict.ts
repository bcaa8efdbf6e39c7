import { TaskStatus, type TaskResult } from '@threadmill/nestjs';

/** The witness task with a retry policy (five retries). */
export const WITH_RETRY = 'WitnessService.work';
/** The witness task without a retry policy: its first failed attempt ends the run FAILED. */
export const WITHOUT_RETRY = 'WitnessService.once';

/** What the witness recorded outside the system, per run id. */
export interface WitnessRecord {
  /** The process (pid) of each start of the run's handler. */
  readonly startPids: ReadonlyMap<string, readonly number[]>;
  readonly completions: ReadonlyMap<string, number>;
}

/** The worker processes a scenario SIGKILLed. */
export interface Kills {
  readonly pids: ReadonlySet<number>;
  /** The runs they leased when they died (read right after each kill): the only runs a kill can have cut. */
  readonly cut: ReadonlySet<string>;
}

/**
 * What the oracle concluded about a set of runs. A run is **touched** when
 * one of its starts happened in a worker process that was later SIGKILLed;
 * a touched run may have been cut between its start and its start mark, so
 * it may have started more often than it was charged.
 */
export interface Verdict {
  /**
   * Confirmed runs that ended neither SUCCESSFUL with a completion in the
   * witness nor, for the task without a retry policy, FAILED by a SIGKILL
   * (`failedByKill`).
   */
  readonly lost: string[];
  /** The lost runs Redis no longer holds at all (their enqueue did not survive). */
  readonly missing: string[];
  /** Completions beyond the first, summed over runs. */
  readonly duplicates: number;
  readonly statuses: Record<string, number>;
  /** Handler starts the witness counted, summed over runs. */
  readonly started: number;
  /** Attempts Redis charged (the final `attempts`), summed over runs. */
  readonly charged: number;
  /** Runs with a start in a killed process. */
  readonly touched: number;
  /** Runs charged fewer attempts than they started (an attempt cut before its start mark landed, or a stale outcome). */
  readonly undercharged: number;
  /** Runs charged more attempts than they started: a run charged for an attempt that never started. */
  readonly overcharged: string[];
  /** Undercharged runs none of whose starts was in a killed process. */
  readonly unexplainedUndercharge: string[];
  /** Untouched runs that did not end **clean**: SUCCESSFUL with one attempt charged, one start and one completion. */
  readonly untouchedNotClean: string[];
  /** Runs that did not end clean though no kill cut them (a finer test than `untouchedNotClean`). */
  readonly uncleanNotCut: string[];
  /**
   * Runs of the task without a retry policy that ended FAILED by an
   * `AcknowledgementTimeoutError` of an attempt that ran in a killed process,
   * had started there and was cut by the kill: what a SIGKILL may cost such a run.
   */
  readonly failedByKill: string[];
  /** FAILED runs that a kill does not explain as above. */
  readonly failedWithoutKill: string[];
}

/** Worker ids are `host:pid:slot`. */
const pidOf = (workerId: string | undefined): number => Number(workerId?.split(':').at(-2));

/**
 * Whether a FAILED run is one a SIGKILL may fail: of the task without a
 * retry policy, its last attempt charged by the reaper (its lease expired
 * after it started) and run in a killed process.
 */
function failedByKill(result: TaskResult, killedPids: ReadonlySet<number>): boolean {
  return (
    result.taskName === WITHOUT_RETRY &&
    result.errors.at(-1)?.errorClass === 'AcknowledgementTimeoutError' &&
    killedPids.has(pidOf(result.workerIds.at(-1)))
  );
}

/**
 * Judges the final `results` of `ids` (in that order, null where Redis does
 * not hold the run) against the witness and the kills.
 */
export function judge(
  ids: readonly string[],
  results: readonly (TaskResult | null)[],
  witness: WitnessRecord,
  kills: Kills,
): Verdict {
  const statuses: Record<string, number> = {};
  const verdict = {
    lost: [] as string[],
    missing: [] as string[],
    duplicates: 0,
    statuses,
    started: 0,
    charged: 0,
    touched: 0,
    undercharged: 0,
    overcharged: [] as string[],
    unexplainedUndercharge: [] as string[],
    untouchedNotClean: [] as string[],
    uncleanNotCut: [] as string[],
    failedByKill: [] as string[],
    failedWithoutKill: [] as string[],
  };
  ids.forEach((id, i) => {
    const result = results[i] ?? null;
    const pids = witness.startPids.get(id) ?? [];
    const starts = pids.length;
    const completions = witness.completions.get(id) ?? 0;
    const touched = pids.some((pid) => kills.pids.has(pid));
    const status = result?.status ?? 'MISSING';
    statuses[status] = (statuses[status] ?? 0) + 1;
    verdict.started += starts;
    verdict.duplicates += Math.max(completions - 1, 0);
    if (touched) verdict.touched++;
    if (!result) {
      verdict.missing.push(id);
      verdict.lost.push(id);
      return;
    }
    const charged = result.attempts;
    verdict.charged += charged;
    if (charged > starts) verdict.overcharged.push(id);
    if (charged < starts) {
      verdict.undercharged++;
      if (!touched) verdict.unexplainedUndercharge.push(id);
    }
    const clean = result.status === TaskStatus.SUCCESSFUL && charged === 1 && starts === 1 && completions === 1;
    if (!touched && !clean) verdict.untouchedNotClean.push(id);
    if (!kills.cut.has(id) && !clean) verdict.uncleanNotCut.push(id);
    if (result.status === TaskStatus.FAILED) {
      if (touched && kills.cut.has(id) && failedByKill(result, kills.pids)) {
        verdict.failedByKill.push(id);
        return;
      }
      verdict.failedWithoutKill.push(id);
    }
    if (result.status !== TaskStatus.SUCCESSFUL || completions === 0) verdict.lost.push(id);
  });
  return verdict;
}
