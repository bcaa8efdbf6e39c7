import type { QueueCounts, Segment } from '@threadmill/nestjs';
import { Box, Text } from 'ink';
import { compact, displayWidth, truncate } from './format.js';
import { TABS } from './navigation.js';

/** Props of {@link SegmentTabs}. */
export interface SegmentTabsProps {
  /** Counts of the selected queue; undefined before the first read. */
  readonly counts: QueueCounts | undefined;
  readonly segment: Segment;
  readonly columns: number;
}

const SHORT: Record<Segment, string> = {
  waiting: 'wait',
  ready: 'ready',
  deferred: 'defer',
  running: 'run',
  successful: 'succ',
  failed: 'fail',
  quarantined: 'quar',
  cancelled: 'canc',
};

/** Tab labels, the most telling variant that fits: full names with counts, short names, short names alone. */
function labels(counts: QueueCounts | undefined, columns: number): string[] {
  const variants = [
    (s: Segment, n: number) => ` ${n} ${s} ${counts ? compact(counts[s]) : '·'} `,
    (s: Segment, n: number) => ` ${n} ${SHORT[s]} ${counts ? compact(counts[s]) : '·'} `,
    (s: Segment, n: number) => ` ${n} ${SHORT[s]} `,
  ];
  for (const variant of variants) {
    const tabs = TABS.map((s, i) => variant(s, i + 1));
    if (tabs.reduce((width, tab) => width + displayWidth(tab), 0) + tabs.length - 1 <= columns) return tabs;
  }
  return TABS.map((s, i) => variants[2]!(s, i + 1));
}

/** The segment tabs of the selected queue (keys 1–7, in {@link TABS} order), the current one highlighted. */
export function SegmentTabs({ counts, segment, columns }: SegmentTabsProps) {
  const tabs = labels(counts, columns);
  let left = columns;
  return (
    <Box width={columns} height={1} overflow="hidden">
      {TABS.map((s, i) => {
        const text = truncate((i > 0 ? '│' : '') + tabs[i]!, left);
        left -= displayWidth(text);
        const [separator, label] = i > 0 && text.startsWith('│') ? ['│', text.slice(1)] : ['', text];
        return (
          <Text key={s} wrap="truncate-end">
            <Text dimColor>{separator}</Text>
            <Text inverse={s === segment} bold={s === segment}>
              {label}
            </Text>
          </Text>
        );
      })}
    </Box>
  );
}
