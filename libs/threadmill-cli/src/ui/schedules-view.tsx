import type { ScheduleInfo } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { fit, json, oneLine, timestamp, wrapIndented } from './format.js';
import { ScrollPane, scrollLabel, type PaneLine } from './scroll-pane.js';

/** When a schedule fires, in words: its cron and time zone, or its interval. */
function when(schedule: ScheduleInfo): string {
  if (schedule.cron !== null)
    return `cron ${schedule.cron}${schedule.tz && schedule.tz !== 'UTC' ? ` (${schedule.tz})` : ''}`;
  return `every ${schedule.everyMs} ms`;
}

/**
 * The schedules as lines of at most `columns` columns: each schedule's id,
 * task and timing, then its next run, its last run (with the run's id) and
 * its counts (`docs/schedules.md`).
 */
export function scheduleLines(schedules: readonly ScheduleInfo[], columns: number, now: number): PaneLine[] {
  if (schedules.length === 0) {
    return [{ text: 'No schedules: declare one with @Task({ schedule }) or TaskScheduler.upsert.', dim: true }];
  }
  return schedules.flatMap((schedule, i) => [
    ...(i > 0 ? [{ text: '' }] : []),
    ...wrapIndented(`${schedule.id} · ${schedule.task} · ${when(schedule)}`, columns, 0).map((text) => ({
      text,
      bold: true,
      color: 'cyan',
    })),
    ...wrapIndented(
      `next ${schedule.ended ? 'none (ended)' : schedule.nextRunAt ? timestamp(schedule.nextRunAt, now) : 'planning…'}\n` +
        `last ${timestamp(schedule.lastRunAt, now)}${schedule.lastRunId ? ` · run ${oneLine(schedule.lastRunId)}` : ''}\n` +
        `runs ${schedule.runs} · skipped ${schedule.skipped} · queue ${schedule.queue} · ${schedule.source} · ` +
        `overlap ${schedule.overlap} · catch-up ${schedule.catchUp} · args ${oneLine(json(schedule.args))}`,
      columns,
      2,
    ).map((text) => ({ text })),
  ]);
}

/** Props of {@link SchedulesView}. */
export interface SchedulesViewProps {
  readonly count: number;
  readonly lines: readonly PaneLine[];
  readonly scroll: number;
  readonly rows: number;
  readonly columns: number;
}

/** The schedules view: a title line and the {@link scheduleLines}, scrolling. */
export function SchedulesView({ count, lines, scroll, rows, columns }: SchedulesViewProps) {
  const position = scrollLabel(scroll, rows, lines.length);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold color="cyan" wrap="truncate-end">
        {fit(` Schedules (${count})`, columns - position.length - 1) + ' ' + position}
      </Text>
      <ScrollPane lines={lines} scroll={scroll} rows={rows} columns={columns} />
    </Box>
  );
}
