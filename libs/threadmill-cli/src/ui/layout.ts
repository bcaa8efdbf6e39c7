/** The narrowest terminal the inspector draws in; below it, it asks for a bigger one. */
export const MIN_COLUMNS = 70;
/** The lowest terminal the inspector draws in. */
export const MIN_ROWS = 14;

/** How the screen's rows are shared out. */
export interface Layout {
  readonly columns: number;
  readonly rows: number;
  /** Queue lines shown at once; more queues scroll. */
  readonly queueRows: number;
  /** Run lines shown at once: the page size of the run list. */
  readonly runRows: number;
  /** Content lines of the detail pane and the workers view. */
  readonly paneRows: number;
}

/**
 * Shares `rows` between the sections. The run list view has six fixed lines
 * (header, queue table head, tabs, run table head, status, key help); the
 * queue table gets at most a third of the rest, so runs keep most of the room.
 */
export function layout(columns: number, rows: number, queueCount: number): Layout {
  const free = Math.max(2, rows - 6);
  const queueRows = Math.min(Math.max(1, queueCount), Math.max(1, Math.floor(free / 3)));
  return {
    columns,
    rows,
    queueRows,
    runRows: Math.max(1, free - queueRows),
    // header, pane title, status and key help
    paneRows: Math.max(1, rows - 4),
  };
}

/** The first index of the page of `size` items that holds item `selected`: lists scroll a page at a time. */
export function pageStart(selected: number, size: number): number {
  return Math.floor(Math.max(0, selected) / Math.max(1, size)) * Math.max(1, size);
}
