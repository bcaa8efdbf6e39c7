import { Text } from 'ink';
import { displayWidth, fit } from './format.js';
import type { Mode } from './navigation.js';

/** Props of {@link KeyHelp}. */
export interface KeyHelpProps {
  readonly mode: Mode;
  readonly prompting: boolean;
  readonly columns: number;
}

/** Keys of each view, most useful first: those that do not fit are left out, never wrapped. */
const KEYS: Record<Mode | 'prompt', readonly (readonly [key: string, does: string])[]> = {
  runs: [
    ['q', 'quit'],
    ['Tab/←→', 'queue'],
    ['1-7', 'tab'],
    ['↑↓', 'run'],
    ['⏎', 'open'],
    ['R', 'requeue'],
    ['d', 'dequeue'],
    ['c', 'cancel'],
    ['p', 'purge'],
    ['A', 'requeue all'],
    ['P', 'pause/resume'],
    ['w', 'workers'],
    ['s', 'schedules'],
    ['r', 'refresh'],
    ['PgUp/PgDn', 'page'],
  ],
  detail: [
    ['q', 'quit'],
    ['Esc', 'back'],
    ['↑↓', 'scroll'],
    ['PgUp/PgDn', 'page'],
    ['R', 'requeue'],
    ['d', 'dequeue'],
    ['c', 'cancel'],
    ['w', 'workers'],
    ['r', 'refresh'],
  ],
  workers: [
    ['q', 'quit'],
    ['Esc', 'back'],
    ['↑↓', 'scroll'],
    ['PgUp/PgDn', 'page'],
    ['s', 'schedules'],
    ['r', 'refresh'],
  ],
  schedules: [
    ['q', 'quit'],
    ['Esc', 'back'],
    ['↑↓', 'scroll'],
    ['PgUp/PgDn', 'page'],
    ['w', 'workers'],
    ['r', 'refresh'],
  ],
  prompt: [['Esc', 'cancel']],
};

/** The keys that work in the current view, on one line. */
export function KeyHelp({ mode, prompting, columns }: KeyHelpProps) {
  const shown: (readonly [string, string])[] = [];
  let used = 0;
  for (const [key, does] of KEYS[prompting ? 'prompt' : mode]) {
    const width = displayWidth(` ${key} ${does}`);
    if (used + width > columns) break;
    shown.push([key, does]);
    used += width;
  }
  return (
    <Text wrap="truncate-end">
      {shown.map(([key, does]) => (
        <Text key={key}>
          <Text bold color="cyan">{` ${key}`}</Text>
          <Text dimColor>{` ${does}`}</Text>
        </Text>
      ))}
      <Text>{fit('', columns - used)}</Text>
    </Text>
  );
}
