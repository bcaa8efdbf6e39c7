import type { Phase, PhaseResult } from './phases.js';

/** A median with its range over the repeats. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** Runs of one AOF mode: per system, one entry per repeat. */
export type ModeRuns = Record<string, Partial<Record<Phase, PhaseResult>>[]>;

export function spread(values: number[]): Spread {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted.at(-1)! };
}

/** One metric of one phase over a system's repeats. */
export function metric(runs: ModeRuns, system: string, phase: Phase, key: keyof PhaseResult): Spread | undefined {
  const values = (runs[system] ?? []).map((run) => run[phase]?.[key]).filter((v): v is number => typeof v === 'number');
  return values.length > 0 ? spread(values) : undefined;
}

/**
 * The ratio of a metric between two systems, computed repeat by repeat (the
 * runs of one repeat ran back to back on the same Redis), then summarised.
 */
export function ratio(
  runs: ModeRuns,
  system: string,
  peer: string,
  phase: Phase,
  key: keyof PhaseResult,
): Spread | undefined {
  const ours = runs[system] ?? [];
  const theirs = runs[peer] ?? [];
  const values = ours
    .map((run, i) => (run[phase]?.[key] as number) / (theirs[i]?.[phase]?.[key] as number))
    .filter((v) => Number.isFinite(v));
  return values.length > 0 ? spread(values) : undefined;
}
