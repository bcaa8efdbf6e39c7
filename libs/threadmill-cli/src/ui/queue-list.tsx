import type { QueueOverview } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { cell, compact, duration, fit, rate } from './format.js';
import { pageStart } from './layout.js';

/** Props of {@link QueueList}. */
export interface QueueListProps {
  readonly queues: readonly QueueOverview[];
  readonly selected: string | undefined;
  /** Queue lines shown at once. */
  readonly rows: number;
  readonly columns: number;
}

/** Count columns, in tab order: heading, field and the colour a non-zero count gets. */
const COUNTS = [
  ['READY', 'ready', undefined],
  ['RUN', 'running', 'yellow'],
  ['DEFER', 'deferred', undefined],
  ['SUCC', 'successful', undefined],
  ['FAIL', 'failed', 'red'],
  ['QUAR', 'quarantined', 'magenta'],
  ['CANC', 'cancelled', 'gray'],
] as const;
const COUNT = 6;
const RATE = 6;
const AGE = 7;
/** Marker, counts, in/s, out/s and oldest: the rest is the queue name's. */
const FIXED = 2 + COUNTS.length * COUNT + 2 * RATE + AGE;

/**
 * The queue table: counts per segment, rates and the oldest ready run's age
 * (a paused queue says so after its name, in yellow); scrolls a page at a time.
 */
export function QueueList({ queues, selected, rows, columns }: QueueListProps) {
  const nameWidth = columns - FIXED;
  const at = Math.max(
    0,
    queues.findIndex((q) => q.queue === selected),
  );
  const start = pageStart(at, rows);
  const shown = queues.slice(start, start + rows);
  const title = queues.length > rows ? `QUEUE ${start + 1}–${start + shown.length}/${queues.length}` : 'QUEUE';
  return (
    <Box flexDirection="column" height={rows + 1} width={columns} overflow="hidden">
      <Text bold dimColor wrap="truncate-end">
        {'  ' +
          cell(title, nameWidth) +
          COUNTS.map(([heading]) => fit(heading, COUNT, 'right')).join('') +
          fit('IN/s', RATE, 'right') +
          fit('OUT/s', RATE, 'right') +
          fit('OLDEST', AGE, 'right')}
      </Text>
      {queues.length === 0 && <Text dimColor>{fit('  no queues registered under this alias yet', columns)}</Text>}
      {shown.map((q) => {
        const isSelected = q.queue === selected;
        return (
          <Text key={q.queue} bold={isSelected} wrap="truncate-end">
            <Text color="cyan">{isSelected ? '▸ ' : '  '}</Text>
            <Text color={q.paused ? 'yellow' : isSelected ? 'cyan' : undefined}>{cell(queueLabel(q), nameWidth)}</Text>
            {COUNTS.map(([heading, field, color]) => (
              <Text key={heading} color={q[field] > 0 ? color : undefined} dimColor={q[field] === 0}>
                {cell(compact(q[field]), COUNT, 'right')}
              </Text>
            ))}
            <Text>{cell(rate(q.ingressPerSecond), RATE, 'right')}</Text>
            <Text>{cell(rate(q.egressPerSecond), RATE, 'right')}</Text>
            <Text>{cell(q.oldestReadyAgeMs === null ? '—' : duration(q.oldestReadyAgeMs), AGE, 'right')}</Text>
          </Text>
        );
      })}
    </Box>
  );
}

/** A queue's name, with PAUSED, its concurrency cap and its rate limit when it has them. */
export function queueLabel(q: QueueOverview): string {
  const marks = [q.queue];
  if (q.paused) marks.push('PAUSED');
  if (q.concurrencyCap !== null && q.concurrencyCap !== undefined) marks.push(`CAP ${q.concurrencyCap}`);
  if (q.rateLimit) {
    const { max, perMs } = q.rateLimit;
    marks.push(`${max}/${perMs % 1_000 === 0 ? `${perMs / 1_000}s` : `${perMs}ms`}`);
  }
  return marks.join(' ');
}
