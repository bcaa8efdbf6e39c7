import { CLOCK_SKEW_WARNING_MS, type LeaseInfo, type WorkerInfo } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { cell, duration, fit, oneLine, timestamp, wrapIndented } from './format.js';
import { ScrollPane, scrollLabel, type PaneLine } from './scroll-pane.js';

const INDENT = 4;
/** A ULID and a space. */
const RUN = 27;
const QUEUE = 10;
const DEADLINE = 10;

/** A lease's deadline relative to `now` (at most 10 columns); one that passed is the reaper's to settle. */
function deadline(lease: LeaseInfo, now: number): string {
  const left = lease.deadline.getTime() - now;
  return left >= 0 ? `in ${duration(left)}` : `${duration(-left)} ago`;
}

/** One table line per lease: run, queue, task, deadline. */
function leaseLines(leases: readonly LeaseInfo[] | undefined, columns: number, now: number): PaneLine[] {
  if (leases === undefined) return [{ text: `${' '.repeat(INDENT)}reading leases…`, dim: true }];
  if (leases.length === 0) return [{ text: `${' '.repeat(INDENT)}no leases`, dim: true }];
  const task = Math.max(8, columns - INDENT - RUN - QUEUE - DEADLINE);
  const row = (run: string, queue: string, name: string, due: string) =>
    ' '.repeat(INDENT) + cell(run, RUN) + cell(queue, QUEUE) + cell(name, task) + fit(due, DEADLINE);
  return [
    { text: row('LEASE ON RUN', 'QUEUE', 'TASK', 'DEADLINE'), dim: true, bold: true },
    ...leases.map((lease) => ({
      text: row(lease.id, oneLine(lease.queue), oneLine(lease.taskName), deadline(lease, now)),
      color: lease.deadline.getTime() < now ? 'red' : 'yellow',
    })),
  ];
}

/** A worker's clock offset to Redis's; past the threshold at which the worker warns, a yellow line saying what to do. */
function clockLines(worker: WorkerInfo, columns: number): PaneLine[] {
  const ms = worker.clockOffsetMs;
  if (ms === undefined) return [];
  const offset = `clock ${ms >= 0 ? '+' : ''}${ms} ms vs Redis`;
  if (Math.abs(ms) <= CLOCK_SKEW_WARNING_MS)
    return wrapIndented(offset, columns, 2).map((text) => ({ text, dim: true }));
  return wrapIndented(`${offset}: synchronise this host's clock (NTP)`, columns, 2).map((text) => ({
    text,
    color: 'yellow',
  }));
}

/**
 * The live workers as lines of at most `columns` columns: each worker's
 * identity, queues, start, runs done and held, then a table of the leases it
 * holds with their run, task and deadline (once `leasesRead`: the first read
 * after opening the view may predate it).
 */
export function workerLines(
  workers: readonly WorkerInfo[],
  columns: number,
  now: number,
  leasesRead: boolean,
): PaneLine[] {
  if (workers.length === 0) return [{ text: 'No live workers under this alias.', dim: true }];
  return workers.flatMap((worker, i) => [
    ...(i > 0 ? [{ text: '' }] : []),
    ...wrapIndented(`${worker.id} · queues ${worker.queues.join(', ') || '—'}`, columns, 0).map((text) => ({
      text,
      bold: true,
      color: 'cyan',
    })),
    ...wrapIndented(
      `started ${timestamp(new Date(worker.startedAt), now)} · seen ${duration(now - worker.seenAt)} ago\n` +
        `concurrency ${worker.concurrency} · runs done ${worker.done} · runs held ${worker.held}`,
      columns,
      2,
    ).map((text) => ({ text })),
    ...clockLines(worker, columns),
    ...leaseLines(leasesRead ? worker.leases : undefined, columns, now),
  ]);
}

/** Props of {@link WorkersView}. */
export interface WorkersViewProps {
  readonly count: number;
  readonly lines: readonly PaneLine[];
  readonly scroll: number;
  readonly rows: number;
  readonly columns: number;
}

/** The workers view: a title line and the {@link workerLines}, scrolling. */
export function WorkersView({ count, lines, scroll, rows, columns }: WorkersViewProps) {
  const position = scrollLabel(scroll, rows, lines.length);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold color="cyan" wrap="truncate-end">
        {fit(` Workers (${count} live)`, columns - position.length - 1) + ' ' + position}
      </Text>
      <ScrollPane lines={lines} scroll={scroll} rows={rows} columns={columns} />
    </Box>
  );
}
