import { Text } from 'ink';
import { displayWidth, fit } from './format.js';

/** Props of {@link Header}. */
export interface HeaderProps {
  /** Where the inspector is connected (password masked). */
  readonly describe: string;
  readonly alias: string;
  readonly queues: number;
  readonly workers: number;
  /** Local time of the latest refresh; undefined before the first. */
  readonly refreshedAt: number | undefined;
  readonly columns: number;
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function clock(ms: number): string {
  const date = new Date(ms);
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** The title bar: what the inspector is connected to, how many queues and live workers, when it last read. */
export function Header({ describe, alias, queues, workers, refreshedAt, columns }: HeaderProps) {
  const right = refreshedAt === undefined ? ' reading… ' : ` ${clock(refreshedAt)} `;
  // Counts first: a long address (a cluster's nodes) is what gets cut.
  const left = ` Threadmill · ${plural(queues, 'queue')} · ${plural(workers, 'worker')} · ${alias}@${describe}`;
  return (
    <Text inverse bold wrap="truncate-end">
      {fit(left, columns - displayWidth(right)) + right}
    </Text>
  );
}
