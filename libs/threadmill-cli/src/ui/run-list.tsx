import { TaskStatus, type Segment, type TaskResult } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { cell, coarse, duration, fit, oneLine } from './format.js';

/** Props of {@link RunList}. */
export interface RunListProps {
  /** The page of runs, or undefined while it is being read. */
  readonly runs: readonly TaskResult[] | undefined;
  /** Index within the segment of the page's first run. */
  readonly offset: number;
  /** Index within the segment of the selected run. */
  readonly cursor: number;
  /** Runs in the segment. */
  readonly total: number;
  readonly segment: Segment;
  readonly queue: string | undefined;
  readonly rows: number;
  readonly columns: number;
  /** The moment ages are computed against (the refresh's). */
  readonly now: number;
}

/** The colour of each status, the same everywhere. */
export const STATUS_COLOR: Record<string, string | undefined> = {
  [TaskStatus.READY]: undefined,
  [TaskStatus.RUNNING]: 'yellow',
  [TaskStatus.SUCCESSFUL]: 'green',
  [TaskStatus.FAILED]: 'red',
  [TaskStatus.QUARANTINED]: 'magenta',
  [TaskStatus.CANCELLED]: 'gray',
};

const STATUS = 12;
const ATTEMPTS = 4;
const AGE = 7;
/** A ULID and a space: ids are shown whole when the task names keep {@link TASK} columns beside them. */
const ID = 27;
/** Columns a task name gets before whole ids do (`BillingService.charge` and its like). */
const TASK = 30;
/** The tail of an id, its random part, and a space: a ULID's head is a timestamp, alike within a burst. */
const SHORT_ID = 14;

/** How a run's id is shown in `width` columns: whole, or its tail after an ellipsis. */
export function idCell(id: string, width: number): string {
  return width >= ID || id.length < width ? id : `…${id.slice(-(width - 2))}`;
}

/**
 * How long a run has been where it is: waiting since enqueue, running since
 * its latest claim, finished since it finished; a deferred run counts down.
 */
export function runAge(run: TaskResult, now: number): string {
  if (run.status === TaskStatus.READY && run.runAfter && run.runAfter.getTime() > now) {
    return `in ${coarse(run.runAfter.getTime() - now)}`;
  }
  const since = run.finishedAt ?? (run.status === TaskStatus.RUNNING ? run.lastAttemptedAt : null) ?? run.enqueuedAt;
  return since ? duration(now - since.getTime()) : '—';
}

/** The runs of one page of a segment, the selected one highlighted; always `rows + 1` lines tall. */
export function RunList({ runs, offset, cursor, total, segment, queue, rows, columns, now }: RunListProps) {
  const flexible = columns - 2 - STATUS - ATTEMPTS - AGE;
  const idWidth = flexible >= ID + TASK ? ID : SHORT_ID;
  const taskWidth = flexible - idWidth;
  const empty =
    runs === undefined ? 'reading…' : total === 0 || runs.length === 0 ? `no ${segment} runs in ${queue ?? '—'}` : '';
  return (
    <Box flexDirection="column" height={rows + 1} width={columns} overflow="hidden">
      <Text bold dimColor wrap="truncate-end">
        {'  ' +
          cell('ID', idWidth) +
          cell('TASK', taskWidth) +
          cell('STATUS', STATUS) +
          cell('ATT', ATTEMPTS, 'right') +
          ' ' +
          fit('AGE', AGE - 1)}
      </Text>
      {empty && <Text dimColor>{fit(`  ${empty}`, columns)}</Text>}
      {(runs ?? []).slice(0, rows).map((run, i) => {
        const isSelected = offset + i === cursor;
        return (
          <Text key={run.id} inverse={isSelected} wrap="truncate-end">
            {isSelected ? '▸ ' : '  '}
            {cell(idCell(run.id, idWidth), idWidth)}
            {cell(oneLine(run.taskName), taskWidth)}
            <Text color={STATUS_COLOR[run.status]}>{cell(run.status, STATUS)}</Text>
            {cell(String(run.attempts), ATTEMPTS, 'right')}
            {' ' + fit(runAge(run, now), AGE - 1)}
          </Text>
        );
      })}
    </Box>
  );
}
