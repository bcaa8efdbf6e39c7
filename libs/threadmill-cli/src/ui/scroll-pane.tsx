import { Box, Text } from 'ink';
import { truncate } from './format.js';

/** One line of a scrolling pane, already wrapped to the pane's width. */
export interface PaneLine {
  readonly text: string;
  readonly color?: string;
  readonly bold?: boolean;
  readonly dim?: boolean;
}

/** Props of {@link ScrollPane}. */
export interface ScrollPaneProps {
  readonly lines: readonly PaneLine[];
  /** Index of the first line shown. */
  readonly scroll: number;
  readonly rows: number;
  readonly columns: number;
}

/** A window of `rows` lines onto `lines`, starting at `scroll`; always exactly `rows` tall. */
export function ScrollPane({ lines, scroll, rows, columns }: ScrollPaneProps) {
  const shown = lines.slice(scroll, scroll + rows);
  return (
    <Box flexDirection="column" height={rows} width={columns} overflow="hidden">
      {shown.map((line, i) => (
        <Text key={scroll + i} color={line.color} bold={line.bold} dimColor={line.dim} wrap="truncate-end">
          {/* An empty Text takes no row: a space keeps blank lines in place. */}
          {truncate(line.text, columns) || ' '}
        </Text>
      ))}
    </Box>
  );
}

/** The `first–last of total` label of a pane's title. */
export function scrollLabel(scroll: number, rows: number, total: number): string {
  if (total <= rows) return '';
  return `lines ${scroll + 1}–${Math.min(total, scroll + rows)} of ${total}`;
}
