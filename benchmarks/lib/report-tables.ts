import Table from 'cli-table3';
import { metric, type ModeRuns, type Spread } from './aggregate.js';
import type { Phase, PhaseResult } from './phases.js';
import type { SystemSpec } from './systems.js';

/** A column of a report table: one metric of one phase. */
export interface Column {
  readonly title: string;
  readonly phase: Phase;
  readonly key: keyof PhaseResult;
  readonly digits: number;
}

export const fmt = (value: number, digits: number) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A figure's median, with its min–max when `withRange`; `-` for a figure not measured. */
export function cell(spread: Spread | undefined, digits: number, withRange: boolean): string {
  if (!spread) return '-';
  const median = fmt(spread.median, digits);
  return withRange ? `${median} (${fmt(spread.min, digits)}–${fmt(spread.max, digits)})` : median;
}

/** One table of `columns` for `systems`, on the console (medians) and in Markdown (with min–max). */
export function tables(
  runs: ModeRuns,
  systems: readonly SystemSpec[],
  columns: readonly Column[],
  head: string,
): { console: string; markdown: string } {
  const table = new Table({ head: [head, ...columns.map((c) => c.title)], style: { head: ['cyan'] } });
  const md = [
    `| system | ${columns.map((c) => c.title).join(' | ')} |`,
    `| --- | ${columns.map(() => '---:').join(' | ')} |`,
  ];
  for (const system of systems) {
    table.push([system.label, ...columns.map((c) => cell(metric(runs, system.key, c.phase, c.key), c.digits, false))]);
    md.push(
      `| ${system.label} | ${columns.map((c) => cell(metric(runs, system.key, c.phase, c.key), c.digits, true)).join(' | ')} |`,
    );
  }
  return { console: table.toString(), markdown: md.join('\n') };
}
