import { TaskStatus, type RequeueableSegment, type TaskResult } from '@threadmill/nestjs';
import { useInput, type Key } from 'ink';
import { useCallback, useLayoutEffect, useRef, type Dispatch } from 'react';
import type { InspectorStore } from './inspector-store.js';
import { navigate, TABS, type NavigationAction, type NavigationState, type Prompt } from './navigation.js';

/** What a key press may act on. */
export interface KeyContext {
  readonly nav: NavigationState;
  readonly dispatch: Dispatch<NavigationAction>;
  readonly store: InspectorStore;
  readonly queues: readonly string[];
  /** The queue shown. */
  readonly queue: string | undefined;
  /** Runs in the segment shown. */
  readonly total: number;
  /** Run lines per page. */
  readonly pageSize: number;
  /** Lines per page of the detail pane or workers view. */
  readonly paneRows: number;
  /** Greatest scroll of the detail pane or workers view. */
  readonly paneMax: number;
  /** The run requeue, dequeue and cancel act on: the selected one, or the one open. */
  readonly target: TaskResult | undefined;
  readonly quit: () => void;
}

const REQUEUEABLE: readonly string[] = [TaskStatus.FAILED, TaskStatus.QUARANTINED, TaskStatus.CANCELLED];
const CANCELLABLE: readonly string[] = [TaskStatus.READY, TaskStatus.RUNNING];
const ACTION = { requeue: 'Requeue', requeueAll: 'Requeue all', dequeue: 'Dequeue', cancel: 'Cancel' } as const;
const REQUEUEABLE_SEGMENTS: readonly string[] = ['failed', 'quarantined', 'cancelled'];

/** Answers the pending prompt: y/n, or the typed queue name for a purge. */
function answer(ctx: KeyContext, prompt: Prompt, input: string, key: Key): void {
  const { dispatch, store } = ctx;
  if (prompt.kind === 'purge') {
    if (key.escape) {
      dispatch({ type: 'answered' });
      store.notify('Purge cancelled.');
    } else if (key.return) {
      dispatch({ type: 'answered' });
      if (prompt.typed === prompt.queue) void store.purge(prompt.queue);
      else store.notify(`Purge cancelled: "${prompt.typed}" is not "${prompt.queue}".`, 'error');
    } else if (key.backspace || key.delete) {
      dispatch({ type: 'erase' });
    } else if (!key.ctrl && !key.meta && /^[^\p{Cc}]+$/u.test(input)) {
      dispatch({ type: 'type', text: input });
    }
    return;
  }
  if (input === 'y' || input === 'Y') {
    dispatch({ type: 'answered' });
    if (prompt.kind === 'requeueAll') {
      void store.requeueAll(prompt.queue, prompt.segment);
    } else if (prompt.kind === 'requeue') {
      void store.requeue(prompt.run.id);
    } else if (prompt.kind === 'cancel') {
      void store.cancel(prompt.run.id);
    } else {
      // The run is gone once dequeued: its detail pane has nothing left to show.
      if (ctx.nav.mode === 'detail') dispatch({ type: 'back' });
      void store.dequeue(prompt.run.id);
    }
  } else if (input === 'n' || input === 'N' || key.escape) {
    dispatch({ type: 'answered' });
    store.notify(prompt.kind === 'cancel' ? 'Cancel called off.' : `${ACTION[prompt.kind]} cancelled.`);
  }
}

/** The runs each action applies to, and the rule told when the selected one does not qualify. */
const RULES = {
  requeue: [
    (status: string) => REQUEUEABLE.includes(status),
    'only FAILED, QUARANTINED or CANCELLED runs can be requeued',
  ],
  dequeue: [(status: string) => status === TaskStatus.READY, 'only pending runs can be dequeued'],
  cancel: [(status: string) => CANCELLABLE.includes(status), 'only pending or running runs can be cancelled'],
} as const;

/** Asks before a requeue, dequeue or cancel, or says why the run does not qualify. */
function ask(ctx: KeyContext, kind: 'requeue' | 'dequeue' | 'cancel'): void {
  const run = ctx.target;
  if (!run) return ctx.store.notify('No run selected.', 'error');
  const [fits, rule] = RULES[kind];
  if (!fits(run.status)) {
    // The id is on screen already; the rule must fit in 80 columns.
    return ctx.store.notify(`Run is ${run.status}: ${rule}.`, 'error');
  }
  ctx.dispatch({ type: 'ask', prompt: { kind, run: { id: run.id, status: run.status } } });
}

/** Asks before requeueing every run of the tab shown, or says which tabs it applies to. */
function askRequeueAll(ctx: KeyContext): void {
  const { queue, nav } = ctx;
  if (!queue || nav.mode !== 'runs') return;
  if (!REQUEUEABLE_SEGMENTS.includes(nav.segment)) {
    return ctx.store.notify('Requeue all applies to the failed, quarantined and cancelled tabs.', 'error');
  }
  ctx.dispatch({ type: 'ask', prompt: { kind: 'requeueAll', queue, segment: nav.segment as RequeueableSegment } });
}

/** Moves the run cursor, or scrolls the detail pane or workers view. */
function move(ctx: KeyContext, key: Key): boolean {
  const { nav, dispatch } = ctx;
  const page = nav.mode === 'runs' ? ctx.pageSize : ctx.paneRows;
  const steps: [pressed: boolean, by: number][] = [
    [key.upArrow, -1],
    [key.downArrow, 1],
    [key.pageUp, -page],
    [key.pageDown, page],
    [key.home, -Infinity],
    [key.end, Infinity],
  ];
  const by = steps.find(([pressed]) => pressed)?.[1];
  if (by === undefined) return false;
  if (nav.mode === 'runs') dispatch({ type: 'move', by, total: ctx.total });
  else dispatch({ type: 'scroll', by, max: ctx.paneMax });
  return true;
}

/** What each key does; see the key help line. Exported for tests of the key map alone. */
export function handleKey(ctx: KeyContext, input: string, key: Key): void {
  const { nav, dispatch, store } = ctx;
  if (nav.prompt) return answer(ctx, nav.prompt, input, key);
  if (move(ctx, key)) return;
  const segment = /^[1-7]$/.test(input) ? TABS[Number(input) - 1] : undefined;
  if (input === 'q') ctx.quit();
  else if (key.escape) dispatch({ type: 'back' });
  else if (segment) dispatch({ type: 'segment', segment });
  else if (key.tab || key.leftArrow || key.rightArrow) {
    const step = key.leftArrow || (key.tab && key.shift) ? -1 : 1;
    if (ctx.queue) dispatch({ type: 'queue', queues: ctx.queues, current: ctx.queue, step });
  } else if (key.return && nav.mode === 'runs') {
    if (ctx.target) dispatch({ type: 'open', runId: ctx.target.id });
  } else if (input === 'r') void store.refresh();
  else if (input === 'w') dispatch({ type: 'workers' });
  else if (input === 's') dispatch({ type: 'schedules' });
  else if (input === 'R') ask(ctx, 'requeue');
  else if (input === 'A') askRequeueAll(ctx);
  else if (input === 'd') ask(ctx, 'dequeue');
  else if (input === 'c') ask(ctx, 'cancel');
  else if (input === 'p') {
    if (ctx.queue) dispatch({ type: 'ask', prompt: { kind: 'purge', queue: ctx.queue, typed: '' } });
  } else if (input === 'P') {
    // No prompt: pausing is harmless and undone by the same key.
    const shown = store.getSnapshot().overview.find((q) => q.queue === ctx.queue);
    if (shown) void store.togglePause(shown.queue, shown.paused);
  }
}

/** A key press with nothing pressed, to build the keys of a chunk of typed text. */
const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};

/**
 * The key presses in one chunk of input. Over SSH, keys typed quickly arrive
 * together ("5\r", "Ry"), and Ink hands such a chunk over as one string.
 */
export function splitKeys(input: string, key: Key): [string, Key][] {
  if ([...input].length <= 1) return [[input, key]];
  return [...input].map((char): [string, Key] => {
    if (char === '\r' || char === '\n') return ['', { ...NO_KEY, return: true }];
    if (char === '\t') return ['', { ...NO_KEY, tab: true }];
    if (char === '\u007F') return ['', { ...NO_KEY, delete: true }];
    if (char === '\b') return ['', { ...NO_KEY, backspace: true }];
    if (char === '\u001B') return ['', { ...NO_KEY, escape: true }];
    return [char, { ...NO_KEY, shift: char !== char.toLowerCase() }];
  });
}

/** Whether the selection the screen shows still holds after `now`: a run shown as selected is still the one meant. */
function sameSelection(now: NavigationState, shown: NavigationState): boolean {
  return (
    now.queue === shown.queue && now.segment === shown.segment && now.cursor === shown.cursor && now.mode === shown.mode
  );
}

/**
 * Routes every key press to {@link handleKey}. Keys may come faster than
 * frames (a chunk of typed text, or a y right after an R): each sees the
 * navigation the previous one left, through the same reducer React applies;
 * once one changes the selection, the next no longer acts on the run the
 * screen showed as selected.
 */
export function useKeyBindings(ctx: KeyContext): void {
  const latest = useRef(ctx);
  useLayoutEffect(() => {
    latest.current = ctx;
  });
  const onKey = useCallback((input: string, key: Key) => {
    const shown = latest.current;
    let nav = shown.nav;
    const dispatch = (action: NavigationAction) => {
      nav = navigate(nav, action);
      shown.dispatch(action);
    };
    const context = (): KeyContext => ({
      ...shown,
      nav,
      target: sameSelection(nav, shown.nav) ? shown.target : undefined,
    });
    for (const [char, pressed] of splitKeys(input, key)) handleKey({ ...context(), dispatch }, char, pressed);
    // Until the next frame, further keys start from here.
    latest.current = context();
  }, []);
  useInput(onKey);
}
