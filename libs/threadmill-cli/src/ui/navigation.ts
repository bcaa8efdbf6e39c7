import type { RequeueableSegment, Segment } from '@threadmill/nestjs';

/**
 * The segment tabs in key order (1–7): what is pending now and what is
 * running first, then what waits for later, then the outcomes.
 */
export const TABS: readonly Segment[] = [
  'ready',
  'running',
  'deferred',
  'successful',
  'failed',
  'quarantined',
  'cancelled',
  // Last, so the number keys of the other tabs stay as they were.
  'waiting',
];

/** What the body of the screen shows. */
export type Mode = 'runs' | 'detail' | 'workers' | 'schedules';

/** The run an action is about, as it was when the action was asked for. */
export interface RunRef {
  readonly id: string;
  readonly status: string;
}

/** A question waiting for an answer before a destructive action. */
export type Prompt =
  | { readonly kind: 'requeue' | 'dequeue' | 'cancel'; readonly run: RunRef }
  | { readonly kind: 'purge'; readonly queue: string; readonly typed: string }
  | { readonly kind: 'requeueAll'; readonly queue: string; readonly segment: RequeueableSegment };

/** Where the operator is: the selected queue, segment and run, the open view and any pending question. */
export interface NavigationState {
  /** Undefined until chosen: the first queue is shown. */
  readonly queue: string | undefined;
  readonly segment: Segment;
  /** Index of the selected run within the whole segment (not the page). */
  readonly cursor: number;
  readonly mode: Mode;
  /** The run open in the detail pane. */
  readonly runId: string | undefined;
  /** First line shown of the detail pane, workers or schedules view. */
  readonly scroll: number;
  readonly prompt: Prompt | undefined;
}

/** What can happen to the navigation: one action per key effect. */
export type NavigationAction =
  | { readonly type: 'queue'; readonly queues: readonly string[]; readonly current: string; readonly step: number }
  | { readonly type: 'segment'; readonly segment: Segment }
  | { readonly type: 'move'; readonly by: number; readonly total: number }
  | { readonly type: 'clamp'; readonly total: number }
  | { readonly type: 'open'; readonly runId: string }
  | { readonly type: 'workers' }
  | { readonly type: 'schedules' }
  | { readonly type: 'back' }
  | { readonly type: 'scroll'; readonly by: number; readonly max: number }
  | { readonly type: 'ask'; readonly prompt: Prompt }
  | { readonly type: 'type'; readonly text: string }
  | { readonly type: 'erase' }
  | { readonly type: 'answered' };

/** Where the inspector starts: the first queue's ready runs. */
export const initialNavigation: NavigationState = {
  queue: undefined,
  segment: 'ready',
  cursor: 0,
  mode: 'runs',
  runId: undefined,
  scroll: 0,
  prompt: undefined,
};

const clamp = (value: number, min: number, max: number) => Math.min(Math.max(value, min), Math.max(min, max));

/** The navigation state machine; pure, so every key's effect on the screen is predictable. */
export function navigate(state: NavigationState, action: NavigationAction): NavigationState {
  switch (action.type) {
    case 'queue': {
      if (action.queues.length === 0) return state;
      const at = Math.max(0, action.queues.indexOf(action.current));
      const next = action.queues[(at + action.step + action.queues.length) % action.queues.length];
      return { ...state, queue: next, cursor: 0, mode: 'runs', scroll: 0 };
    }
    case 'segment':
      return { ...state, segment: action.segment, cursor: 0, mode: 'runs', scroll: 0 };
    case 'move':
      return { ...state, cursor: clamp(state.cursor + action.by, 0, action.total - 1) };
    case 'clamp': {
      const cursor = clamp(state.cursor, 0, action.total - 1);
      return cursor === state.cursor ? state : { ...state, cursor };
    }
    case 'open':
      return { ...state, mode: 'detail', runId: action.runId, scroll: 0 };
    case 'workers':
      return { ...state, mode: state.mode === 'workers' ? 'runs' : 'workers', scroll: 0 };
    case 'schedules':
      return { ...state, mode: state.mode === 'schedules' ? 'runs' : 'schedules', scroll: 0 };
    case 'back':
      return { ...state, mode: 'runs', scroll: 0 };
    case 'scroll':
      return { ...state, scroll: clamp(state.scroll + action.by, 0, action.max) };
    case 'ask':
      return { ...state, prompt: action.prompt };
    case 'type':
      return state.prompt?.kind === 'purge'
        ? { ...state, prompt: { ...state.prompt, typed: state.prompt.typed + action.text } }
        : state;
    case 'erase':
      return state.prompt?.kind === 'purge'
        ? { ...state, prompt: { ...state.prompt, typed: [...state.prompt.typed].slice(0, -1).join('') } }
        : state;
    case 'answered':
      return { ...state, prompt: undefined };
  }
}
