import { Text } from 'ink';
import { fit } from './format.js';
import type { StatusMessage } from './inspector-store.js';

/** Props of {@link StatusLine}. */
export interface StatusLineProps {
  /** An action's outcome or a refusal, shown first. */
  readonly message: StatusMessage | undefined;
  /** Why the latest refresh failed. */
  readonly error: string | undefined;
  /** The capacity warning (Redis's memory near maxmemory), shown when there is nothing more pressing. */
  readonly warning: string | null;
  readonly busy: boolean;
  /** Where the operator is, when there is nothing else to say. */
  readonly position: string;
  readonly columns: number;
}

/**
 * One line of feedback: what an action did or why it failed, a failing
 * refresh, the capacity warning, or the position in the list.
 */
export function StatusLine({ message, error, warning, busy, position, columns }: StatusLineProps) {
  if (busy) return <Text color="yellow">{fit(' working…', columns)}</Text>;
  if (message) {
    return (
      <Text color={message.tone === 'error' ? 'red' : 'green'} bold wrap="truncate-end">
        {fit(` ${message.text}`, columns)}
      </Text>
    );
  }
  if (error) {
    return (
      <Text color="red" wrap="truncate-end">
        {fit(` refresh failed, retrying: ${error}`, columns)}
      </Text>
    );
  }
  if (warning) {
    return (
      <Text color="yellow" wrap="truncate-end">
        {fit(` ${warning}`, columns)}
      </Text>
    );
  }
  return (
    <Text dimColor wrap="truncate-end">
      {fit(` ${position}`, columns)}
    </Text>
  );
}
