import { Text } from 'ink';
import type { CapacityReport } from '@threadmill/nestjs';
import { displayWidth, fit } from './format.js';

/** Props of {@link Header}. */
export interface HeaderProps {
  /** Where the inspector is connected (password masked). */
  readonly describe: string;
  readonly alias: string;
  readonly queues: number;
  readonly workers: number;
  /** Redis's memory and the capacity warning; null when not read. */
  readonly capacity: CapacityReport | null;
  /** Local time of the latest refresh; undefined before the first. */
  readonly refreshedAt: number | undefined;
  readonly columns: number;
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function clock(ms: number): string {
  const date = new Date(ms);
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/**
 * Redis's memory as a share of `maxmemory`, in a few columns (`mem 42%`,
 * `! mem 91%` when a figure is over the threshold): the header has no room
 * for more, the capacity warning in the status line carries the figures.
 * Nothing without `maxmemory`: then nothing is compared.
 */
function memory(capacity: CapacityReport | null): string {
  if (!capacity || capacity.usedBytes === null || capacity.maxBytes === null) return '';
  const share = Math.round((capacity.usedBytes / capacity.maxBytes) * 100);
  return `${capacity.warning ? '! ' : ''}mem ${share}% · `;
}

/**
 * The title bar: what the inspector is connected to, how many queues and live
 * workers, Redis's memory, when it last read.
 */
export function Header({ describe, alias, queues, workers, capacity, refreshedAt, columns }: HeaderProps) {
  const right = ` ${memory(capacity)}${refreshedAt === undefined ? 'reading…' : clock(refreshedAt)} `;
  // Counts first: a long address (a cluster's nodes) is what gets cut.
  const left = ` Threadmill · ${plural(queues, 'queue')} · ${plural(workers, 'worker')} · ${alias}@${describe}`;
  return (
    <Text inverse bold wrap="truncate-end">
      {fit(left, columns - displayWidth(right)) + right}
    </Text>
  );
}
