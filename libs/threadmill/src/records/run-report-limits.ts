/**
 * How much of what a task reports (`context.progress`, `context.log`) a run
 * keeps: bounded, so a chatty task cannot grow a run without limit.
 */

/** How many log lines a run keeps: the last ones, of all its attempts. */
export const MAX_LOG_LINES = 100;

/** Longest log line kept, in characters (UTF-16 code units); a longer one is cut and ends with `…`. */
export const MAX_LOG_LINE_CHARS = 1_000;

/** Longest progress value kept, in characters of its JSON; a larger one is refused with `InvalidProgressError`. */
export const MAX_PROGRESS_CHARS = 16_384;
