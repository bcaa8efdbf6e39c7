import type { TaskResult } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { fit, json, timestamp, wrap, wrapIndented } from './format.js';
import { STATUS_COLOR } from './run-list.js';
import { ScrollPane, scrollLabel, type PaneLine } from './scroll-pane.js';

const LABEL = 14;

/** `value` wrapped beside `label`, continuation lines aligned under the value. */
function field(label: string, value: string, columns: number, color?: string): PaneLine[] {
  return wrap(value, columns - LABEL).map((text, i) => ({
    text: (i === 0 ? fit(label, LABEL) : ' '.repeat(LABEL)) + text,
    color,
  }));
}

/** `text` wrapped under a heading, indented by `indent` columns. */
function block(text: string, columns: number, indent: number, style: Omit<PaneLine, 'text'> = {}): PaneLine[] {
  return wrapIndented(text, columns, indent).map((line) => ({ ...style, text: line }));
}

const heading = (text: string): PaneLine[] => [{ text: '' }, { text, bold: true, color: 'cyan' }];

/**
 * Everything about a run, as lines of at most `columns` columns: its fields
 * (its flow, for a flow node) and timestamps, arguments, progress, return value, the log lines it keeps,
 * quarantine record with the raw payload, and each error with its whole stack. Values are shown whole, wrapped.
 */
export function runDetailLines(run: TaskResult | null | undefined, columns: number, now: number): PaneLine[] {
  if (run === undefined) return [{ text: 'reading…', dim: true }];
  if (run === null) return [{ text: 'This run no longer exists (dequeued, purged or expired).', color: 'yellow' }];
  const lines: PaneLine[] = [
    ...field('id', run.id, columns),
    ...field('task', run.taskName, columns),
    ...field('queue', run.queue, columns),
    // A flow node: `threadmill flow <id>` prints its flow.
    ...(run.flowId === undefined ? [] : field('flow', run.flowId, columns)),
    ...field('priority', String(run.priority), columns),
    ...field('status', run.status, columns, STATUS_COLOR[run.status]),
    ...field('attempts', String(run.attempts), columns),
    ...field('workers', run.workerIds.length > 0 ? run.workerIds.join(', ') : '—', columns),
    ...field('enqueued', timestamp(run.enqueuedAt, now), columns),
    ...field('run after', timestamp(run.runAfter, now), columns),
    ...field('started', timestamp(run.startedAt, now), columns),
    ...field('last attempt', timestamp(run.lastAttemptedAt, now), columns),
    ...field('finished', timestamp(run.finishedAt, now), columns),
    ...heading(`Arguments (${run.args.length})`),
    ...block(json(run.args, columns - 2), columns, 2),
  ];
  if (run.progress !== undefined)
    lines.push(...heading('Progress'), ...block(json(run.progress, columns - 2), columns, 2));
  if (run.returnValue !== undefined)
    lines.push(...heading('Return value'), ...block(json(run.returnValue, columns - 2), columns, 2));
  if (run.logs.length > 0) {
    lines.push(...heading(`Logs (last ${run.logs.length})`));
    for (const line of run.logs) lines.push(...block(line, columns, 2));
  }
  if (run.quarantine) {
    const q = run.quarantine;
    lines.push(
      ...heading('Quarantine'),
      ...field('  reason', q.reason, columns, 'magenta'),
      ...field('  at', timestamp(q.at, now), columns),
      ...field('  message', q.message, columns),
      { text: '  payload, as stored:', dim: true },
      ...block(q.payload, columns, 4),
    );
  }
  lines.push(...heading(`Errors (${run.errors.length})`));
  if (run.errors.length === 0) lines.push({ text: '  none', dim: true });
  run.errors.forEach((error, i) => {
    if (i > 0) lines.push({ text: '' });
    lines.push(
      ...block(`#${i + 1} attempt ${error.attempt}: ${error.errorClass}: ${error.message}`, columns, 2, {
        color: 'red',
      }),
      ...block(error.stack || '(no stack)', columns, 4, { dim: true }),
    );
  });
  return lines;
}

/** Props of {@link RunDetail}. */
export interface RunDetailProps {
  readonly runId: string;
  /** The run's status, once read. */
  readonly status: string | undefined;
  readonly lines: readonly PaneLine[];
  readonly scroll: number;
  /** Content lines shown at once. */
  readonly rows: number;
  readonly columns: number;
}

/** The detail pane of one run: a title line and its {@link runDetailLines}, scrolling. */
export function RunDetail({ runId, status, lines, scroll, rows, columns }: RunDetailProps) {
  const position = scrollLabel(scroll, rows, lines.length);
  const title = ` Run ${runId}${status ? ` · ${status}` : ''}`;
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold color="cyan" wrap="truncate-end">
        {fit(title, columns - position.length - 1) + ' ' + position}
      </Text>
      <ScrollPane lines={lines} scroll={scroll} rows={rows} columns={columns} />
    </Box>
  );
}
