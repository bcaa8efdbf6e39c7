import type { TaskInspector } from '@threadmill/nestjs';
import { Box, Text, useApp } from 'ink';
import { useEffect, useReducer } from 'react';
import { ConfirmPrompt } from './confirm-prompt.js';
import { fit } from './format.js';
import { Header } from './header.js';
import { viewKey, type DataView } from './inspector-store.js';
import { KeyHelp } from './key-help.js';
import { layout, MIN_COLUMNS, MIN_ROWS, pageStart } from './layout.js';
import { initialNavigation, navigate } from './navigation.js';
import { QueueList, queueLabel } from './queue-list.js';
import { RunDetail, runDetailLines } from './run-detail.js';
import { RunList } from './run-list.js';
import { SegmentTabs } from './segment-tabs.js';
import { StatusLine } from './status-line.js';
import { useInspector } from './use-inspector.js';
import { useKeyBindings } from './use-key-bindings.js';
import { useTerminalSize } from './use-terminal-size.js';
import { WorkersView, workerLines } from './workers-view.js';
import { SchedulesView, scheduleLines } from './schedules-view.js';

/** Props of {@link App}. */
export interface AppProps {
  readonly inspector: TaskInspector;
  /** Where the inspector is connected, as `createInspector` describes it. */
  readonly describe: string;
  readonly alias: string;
  /** @defaultValue `2000` */
  readonly intervalMs?: number;
  /** A fixed width (tests); by default the terminal's, following resizes. */
  readonly columns?: number;
  /** A fixed height (tests); by default the terminal's, following resizes. */
  readonly rows?: number;
}

/**
 * The terminal inspector: queues with their counts and rates, the runs of a
 * segment of the selected queue, a run's detail, the live workers, and the
 * actions requeue, dequeue and purge behind a confirmation. It fills exactly
 * `columns × rows`; every line is cut to fit, so nothing wraps.
 */
export function App({ inspector, describe, alias, intervalMs = 2000, columns, rows }: AppProps) {
  const { exit } = useApp();
  const size = useTerminalSize(columns, rows);
  const [nav, dispatch] = useReducer(navigate, initialNavigation);
  const { store, snapshot } = useInspector(inspector, intervalMs);
  const { overview } = snapshot;
  const sizes = layout(size.columns, size.rows, overview.length);
  const current = overview.find((q) => q.queue === nav.queue) ?? overview[0];
  const view: DataView = {
    queue: nav.queue,
    segment: nav.segment,
    offset: pageStart(nav.cursor, sizes.runRows),
    limit: sizes.runRows,
    runId: nav.mode === 'detail' ? nav.runId : undefined,
    leases: nav.mode === 'workers',
  };
  const total = current ? current[nav.segment] : 0;
  const runs = snapshot.runsKey === viewKey({ ...view, queue: current?.queue }) ? snapshot.runs : undefined;
  const selected = runs?.[nav.cursor - view.offset];
  const detail = nav.mode === 'detail' && snapshot.detailId === nav.runId ? snapshot.detail : undefined;
  const now = snapshot.refreshedAt ?? 0;

  useEffect(() => store.setView(view), [store, viewKey(view), view.runId, view.leases]);
  useEffect(() => dispatch({ type: 'clamp', total }), [total]);

  const paneLines =
    nav.mode === 'detail'
      ? runDetailLines(detail, size.columns, now)
      : nav.mode === 'workers'
        ? workerLines(snapshot.workers, size.columns, now, snapshot.leasesRead)
        : nav.mode === 'schedules'
          ? scheduleLines(snapshot.schedules, size.columns, now)
          : [];
  useKeyBindings({
    nav,
    dispatch,
    store,
    queues: overview.map((q) => q.queue),
    queue: current?.queue,
    total,
    pageSize: sizes.runRows,
    paneRows: sizes.paneRows,
    paneMax: Math.max(0, paneLines.length - sizes.paneRows),
    target: nav.mode === 'detail' ? (detail ?? undefined) : nav.mode === 'runs' ? selected : undefined,
    quit: exit,
  });

  if (size.columns < MIN_COLUMNS || size.rows < MIN_ROWS) {
    return (
      <Text wrap="truncate-end">
        {fit(`Terminal ${size.columns}×${size.rows} is too small: ${MIN_COLUMNS}×${MIN_ROWS} at least.`, size.columns)}
      </Text>
    );
  }
  // The queue's marks in full here: its cell in the list is cut at narrow widths.
  const label = current ? queueLabel(current) : '—';
  const position =
    total === 0
      ? `${label} · ${nav.segment}: empty`
      : `${label} · ${nav.segment}: run ${Math.min(nav.cursor, total - 1) + 1} of ${total}`;
  return (
    <Box flexDirection="column" width={size.columns} height={size.rows} overflow="hidden">
      <Header
        describe={describe}
        alias={alias}
        queues={overview.length}
        workers={snapshot.workers.length}
        capacity={snapshot.capacity}
        refreshedAt={snapshot.refreshedAt}
        columns={size.columns}
      />
      {nav.mode === 'runs' && (
        <>
          <QueueList queues={overview} selected={current?.queue} rows={sizes.queueRows} columns={size.columns} />
          <SegmentTabs counts={current} segment={nav.segment} columns={size.columns} />
          <RunList
            runs={runs}
            offset={view.offset}
            cursor={nav.cursor}
            total={total}
            segment={nav.segment}
            queue={current?.queue}
            rows={sizes.runRows}
            columns={size.columns}
            now={now}
          />
        </>
      )}
      {nav.mode === 'detail' && nav.runId && (
        <RunDetail
          runId={nav.runId}
          status={detail?.status}
          lines={paneLines}
          scroll={nav.scroll}
          rows={sizes.paneRows}
          columns={size.columns}
        />
      )}
      {nav.mode === 'workers' && (
        <WorkersView
          count={snapshot.workers.length}
          lines={paneLines}
          scroll={nav.scroll}
          rows={sizes.paneRows}
          columns={size.columns}
        />
      )}
      {nav.mode === 'schedules' && (
        <SchedulesView
          count={snapshot.schedules.length}
          lines={paneLines}
          scroll={nav.scroll}
          rows={sizes.paneRows}
          columns={size.columns}
        />
      )}
      {nav.prompt ? (
        <ConfirmPrompt prompt={nav.prompt} columns={size.columns} />
      ) : (
        <StatusLine
          message={snapshot.message}
          error={snapshot.error}
          warning={snapshot.capacity?.warning ?? null}
          busy={snapshot.busy}
          position={position}
          columns={size.columns}
        />
      )}
      <KeyHelp mode={nav.mode} prompting={nav.prompt !== undefined} columns={size.columns} />
    </Box>
  );
}
