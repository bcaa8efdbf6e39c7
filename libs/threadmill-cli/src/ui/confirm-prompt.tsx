import { Text } from 'ink';
import { displayWidth, fit, truncate } from './format.js';
import type { Prompt } from './navigation.js';

/** Props of {@link ConfirmPrompt}. */
export interface ConfirmPromptProps {
  readonly prompt: Prompt;
  readonly columns: number;
}

/** The question and what to answer, for each kind of prompt. */
function words(prompt: Prompt): [question: string, answer: string] {
  switch (prompt.kind) {
    case 'requeue':
      return [` Requeue run ${prompt.run.id} (${prompt.run.status}) to READY?`, ' [y/n] '];
    case 'dequeue':
      return [` Dequeue run ${prompt.run.id} (${prompt.run.status}) and delete it?`, ' [y/n] '];
    case 'cancel':
      return [` Cancel run ${prompt.run.id} (${prompt.run.status})?`, ' [y/n] '];
    case 'requeueAll':
      return [` Requeue EVERY ${prompt.segment} run of ${prompt.queue} to READY?`, ' [y/n] '];
    case 'purge':
      return [
        ` Purge EVERY run of ${prompt.queue}? Type its name, Enter (Esc cancels):`,
        ` ${truncate(prompt.typed, 24)}▌ `,
      ];
  }
}

/**
 * The line that asks before a destructive action, in place of the status
 * line; the answer part always stays visible, the question gives way.
 */
export function ConfirmPrompt({ prompt, columns }: ConfirmPromptProps) {
  const [question, answer] = words(prompt);
  return (
    <Text wrap="truncate-end">
      <Text inverse color="yellow" bold>
        {fit(question, columns - displayWidth(answer))}
      </Text>
      <Text bold>{answer}</Text>
    </Text>
  );
}
