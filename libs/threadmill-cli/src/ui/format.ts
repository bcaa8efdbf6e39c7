import { stripVTControlCharacters } from 'node:util';

/**
 * Text helpers of the inspector. Every line it draws goes through them, so
 * that no line is wider than the terminal: stored values are foreign text
 * (arguments, error messages, stacks) and may hold escapes, tabs, newlines
 * and wide characters.
 */

const ELLIPSIS = '…';

/** Columns a code point takes in a terminal: 0 for marks and format characters, 2 for wide ones. */
function codePointWidth(char: string): number {
  const code = char.codePointAt(0)!;
  if (/\p{Mn}|\p{Me}|\p{Cf}/u.test(char)) return 0;
  if (/\p{Emoji_Presentation}/u.test(char)) return 2;
  const wide =
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf && code !== 0x303f) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x20000 && code <= 0x3fffd);
  return wide ? 2 : 1;
}

/** Columns `text` takes in a terminal (an upper bound for emoji sequences, which is the safe side). */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += codePointWidth(char);
  return width;
}

/**
 * `text` without terminal escapes, with tabs as spaces and any other control
 * character shown as �, so foreign text cannot move the cursor or recolour the screen.
 */
export function clean(text: string): string {
  let out = '';
  for (const char of stripVTControlCharacters(text).replace(/\r\n?/g, '\n')) {
    const code = char.codePointAt(0)!;
    if (char === '\t') out += '  ';
    else if ((code < 0x20 && char !== '\n') || (code >= 0x7f && code <= 0x9f)) out += '�';
    else out += char;
  }
  return out;
}

/** {@link clean} on one line: line breaks become spaces, for table cells. */
export function oneLine(text: string): string {
  return clean(text).replace(/\n+/g, ' ');
}

/** `text` cut to `width` columns, ending in … when it was longer. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const char of text) {
    const w = codePointWidth(char);
    if (used + w > width - 1) break;
    out += char;
    used += w;
  }
  return out + ELLIPSIS;
}

/** `text` truncated to `width` columns and padded to exactly `width`, for table cells. */
export function fit(text: string, width: number, align: 'left' | 'right' = 'left'): string {
  const cut = truncate(text, width);
  const padding = ' '.repeat(Math.max(0, width - displayWidth(cut)));
  return align === 'left' ? cut + padding : padding + cut;
}

/** A table cell: {@link fit} to `width - 1` and a space, so a cut value never runs into the next column. */
export function cell(text: string, width: number, align: 'left' | 'right' = 'left'): string {
  return align === 'left' ? fit(text, width - 1) + ' ' : ' ' + fit(text, width - 1, 'right');
}

/**
 * `text` broken into lines of at most `width` columns: at its own line breaks,
 * at a space when one is near the end of a line, anywhere otherwise (stacks
 * and JSON have long unbroken tokens).
 */
export function wrap(text: string, width: number): string[] {
  const max = Math.max(1, width);
  const lines: string[] = [];
  for (const paragraph of clean(text).split('\n')) {
    let line = '';
    let used = 0;
    for (const char of paragraph) {
      const w = codePointWidth(char);
      if (used + w > max && line !== '') {
        const space = line.lastIndexOf(' ');
        if (space > line.length / 2) {
          lines.push(line.slice(0, space));
          line = line.slice(space + 1);
        } else {
          lines.push(line);
          line = '';
        }
        used = displayWidth(line);
      }
      line += char;
      used += w;
    }
    lines.push(line);
  }
  return lines;
}

/**
 * `text` wrapped to `width` columns, each line indented by `indent`, the
 * continuation of a long line by `hang` more, so a wrapped stack frame reads as one.
 */
export function wrapIndented(text: string, width: number, indent: number, hang = 2): string[] {
  const lines: string[] = [];
  for (const paragraph of clean(text).split('\n')) {
    const [first = '', ...rest] = wrap(paragraph, width - indent);
    lines.push(' '.repeat(indent) + first);
    if (rest.length === 0) continue;
    // Hang under the line's own indentation: a wrapped stack frame stays right of its `at`.
    const hanging = indent + (paragraph.length - paragraph.trimStart().length) + hang;
    const remainder = paragraph.slice(first.length).trimStart();
    for (const line of wrap(remainder, width - hanging)) lines.push(' '.repeat(hanging) + line);
  }
  return lines;
}

/** A count in at most 5 columns: 9999, 12.3k, 123k, 1.2M. */
export function compact(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 100_000) return `${(n / 1000).toFixed(1)}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  if (n < 100_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  return `${Math.round(n / 1_000_000)}M`;
}

/** Runs per second in at most 5 columns. */
export function rate(perSecond: number): string {
  if (perSecond === 0) return '0';
  // A trickle is not nothing: do not round it to 0.0.
  if (perSecond < 0.1) return '<0.1';
  if (perSecond < 10) return perSecond.toFixed(1);
  return compact(Math.round(perSecond));
}

/** `n` as two digits. */
const two = (n: number) => String(n).padStart(2, '0');

/** A duration in at most 6 columns: 0s, 59s, 12m05s, 5h12m, 3d04h. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor(s / 3600) % 24)}h`;
}

/** A duration in at most 4 columns, for table cells: 59s, 12m, 23h, 3d. */
export function coarse(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** A moment as local `YYYY-MM-DD HH:MM:SS.mmm` with how long ago (or ahead) it is. */
export function timestamp(date: Date | null | undefined, now: number): string {
  if (!date || Number.isNaN(date.getTime())) return '—';
  const day = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
  const time = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  const ms = String(date.getMilliseconds()).padStart(3, '0');
  const delta = now - date.getTime();
  const relative = delta >= 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`;
  return `${day} ${time}.${ms} (${relative})`;
}

/**
 * A stored value (arguments, return value) as JSON: on one line when it fits
 * in `width` columns, indented otherwise. Dates show as ISO strings.
 */
export function json(value: unknown, width = Infinity): string {
  if (value === undefined) return 'undefined';
  try {
    const flat = JSON.stringify(value) ?? String(value);
    return displayWidth(flat) <= width ? flat : JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** The message of anything thrown, on one line, for the status line. */
export function errorMessage(error: unknown): string {
  return oneLine(error instanceof Error ? error.message : String(error));
}
