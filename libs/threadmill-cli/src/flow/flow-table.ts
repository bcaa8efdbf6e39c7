import type { TaskInspector } from '@threadmill/nestjs';
import { displayWidth, oneLine, timestamp, truncate } from '../ui/format.js';

/** A flow as `TaskInspector.flow` shows it. */
export type FlowView = NonNullable<Awaited<ReturnType<TaskInspector['flow']>>>;
type FlowNodeView = FlowView['nodes'][number];

/** Dependencies named in a row at most: a batch's callback may wait for thousands. */
const AFTER_NAMED = 3;

/** A node's dependencies, by name (with the policy when not `fail`), the first {@link AFTER_NAMED} of them. */
function afterCell(node: FlowNodeView): string {
  if (node.after.length === 0) return '—';
  const named = node.after
    .slice(0, AFTER_NAMED)
    .map((d) => (d.onFailure === 'fail' ? d.name : `${d.name} (${d.onFailure})`));
  const more = node.after.length - named.length;
  return named.join(', ') + (more > 0 ? ` +${more} more` : '');
}

/**
 * The columns of the node table: heading, and the cell of a node. What
 * tells the graph first; the run id, the longest, last (a narrow terminal cuts it).
 */
const COLUMNS: readonly (readonly [string, (node: FlowNodeView) => string])[] = [
  ['DEPTH', (node) => String(node.depth)],
  ['NODE', (node) => node.name],
  ['STATUS', (node) => node.status ?? 'UNKNOWN'],
  ['ATT', (node) => (node.attempts === null ? '—' : String(node.attempts))],
  ['TASK', (node) => node.task ?? '(run record gone)'],
  ['QUEUE', (node) => node.queue],
  ['AFTER', afterCell],
  ['ID', (node) => node.id],
];

/** `n` and `word`, plural but for one. */
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `text` padded with spaces to `width` columns. */
const pad = (text: string, width: number) => text + ' '.repeat(Math.max(0, width - displayWidth(text)));

/**
 * A flow as lines of text: a heading with its state, times and counts, then
 * one row per node, every node after its dependencies (as the view orders
 * them), with the dependencies it waits for (and their policy, when not
 * `fail`) and its run id. Stored text is cleaned of control characters; with `columns`,
 * every line is cut to that width.
 */
export function flowLines(flow: FlowView, now: number, columns = Infinity): string[] {
  const counts = Object.entries(flow.counts).map(([status, n]) => `${n} ${status.toLowerCase()}`);
  const rows = flow.nodes.map((node) => COLUMNS.map(([, cell]) => oneLine(cell(node))));
  const widths = COLUMNS.map(([heading], i) =>
    rows.reduce((widest, row) => Math.max(widest, displayWidth(row[i]!)), displayWidth(heading)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((text, i) => (i === cells.length - 1 ? text : pad(text, widths[i]!)))
      .join('  ')
      .trimEnd();
  const lines = [
    `Flow ${oneLine(flow.id)} · ${flow.state}`,
    `  created ${timestamp(flow.createdAt, now)}` +
      (flow.finishedAt ? ` · ended ${timestamp(flow.finishedAt, now)}` : ''),
    `  ${[plural(flow.nodes.length, 'node'), plural(flow.edges, 'edge'), ...counts].join(' · ')}`,
    '',
    line(COLUMNS.map(([heading]) => heading)),
    ...rows.map(line),
  ];
  return Number.isFinite(columns) ? lines.map((text) => truncate(text, columns)) : lines;
}
