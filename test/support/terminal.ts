import pty, { type IPty } from '@lydell/node-pty';
import xterm from '@xterm/headless';
import { setTimeout as delay } from 'node:timers/promises';
import { waitUntil } from './wait.js';

// A command in a real terminal, as a person would run it: a pseudo-terminal
// of a given size (@lydell/node-pty, its binary inside its npm package), its
// output drawn by a headless xterm (@xterm/headless), keys typed into it. It
// needs nothing from the system, unlike tmux, which the tests used before.

/**
 * Keys by the names tmux's send-keys gives them; any other string is typed
 * as it is. Sequences as xterm sends them in its normal cursor-key mode.
 */
const KEYS: Record<string, string> = {
  Enter: '\r',
  Escape: '\x1b',
  Tab: '\t',
  BTab: '\x1b[Z',
  BSpace: '\x7f',
  Space: ' ',
  Up: '\x1b[A',
  Down: '\x1b[B',
  Right: '\x1b[C',
  Left: '\x1b[D',
  Home: '\x1b[H',
  End: '\x1b[F',
  PageUp: '\x1b[5~',
  PageDown: '\x1b[6~',
  'C-c': '\x03',
  'C-d': '\x04',
};

/** The pause between two keys of one {@link TerminalProcess.keys} call, about a quick typist's. */
export const KEY_GAP_MS = 50;

export interface TerminalOptions {
  /** Width of the terminal in columns. @defaultValue 80 */
  cols?: number;
  /** Height of the terminal in rows. @defaultValue 24 */
  rows?: number;
  /**
   * Added to the test's environment for the command (`undefined` removes a
   * variable). @defaultValue `{}`; LANG is C.UTF-8 and TERM xterm-256color unless set here
   */
  env?: NodeJS.ProcessEnv;
}

/** How the command ended: its exit code, or the signal that ended it. */
export interface TerminalExit {
  exitCode: number;
  signal: number | undefined;
}

/** A command running in a pseudo-terminal whose screen a test reads and whose keyboard it types on. */
export class TerminalProcess {
  /** Settles when the command has ended and the terminal has shown everything it wrote. */
  readonly exited: Promise<TerminalExit>;
  private ended: TerminalExit | undefined;

  private constructor(
    private readonly child: IPty,
    private readonly emulator: InstanceType<typeof xterm.Terminal>,
  ) {
    child.onData((data) => emulator.write(data));
    // What the emulator answers to the program (cursor position, device
    // attributes) goes back to it, as a real terminal's answers do.
    emulator.onData((data) => {
      if (!this.ended) child.write(data);
    });
    this.exited = new Promise((resolve) => {
      child.onExit(({ exitCode, signal }) => {
        const ended = { exitCode, signal: signal || undefined };
        this.ended = ended;
        emulator.write('', () => resolve(ended));
      });
    });
  }

  /** Starts `file` with `args` in a terminal of `cols` × `rows`. */
  static spawn(file: string, args: string[], options: TerminalOptions = {}): TerminalProcess {
    const { cols = 80, rows = 24 } = options;
    const env: NodeJS.ProcessEnv = { ...process.env, LANG: 'C.UTF-8', TERM: 'xterm-256color', ...options.env };
    // A size inherited from the test's own terminal would override the pty's.
    delete env['COLUMNS'];
    delete env['LINES'];
    for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
    const child = pty.spawn(file, args, { cols, rows, name: env['TERM'], env });
    return new TerminalProcess(child, new xterm.Terminal({ cols, rows, allowProposedApi: true }));
  }

  /** The process id of the command. */
  get pid(): number {
    return this.child.pid;
  }

  /** Whether the command is still running. */
  get running(): boolean {
    return this.ended === undefined;
  }

  /**
   * Types `keys` in order, as tmux's send-keys does: a key name from
   * {@link KEYS} (`Enter`, `Escape`, `Up`, `C-c`...) sends that key, any
   * other string its characters. Each is written on its own, {@link KEY_GAP_MS}
   * after the one before: a program that reads two keys at once (Ink parses
   * one read as one key press) would see `Down` then `Enter` as a single,
   * unknown key.
   */
  async keys(...keys: string[]): Promise<void> {
    for (const [i, key] of keys.entries()) {
      if (i > 0) await delay(KEY_GAP_MS);
      if (this.ended) {
        throw new Error(`cannot type ${JSON.stringify(key)}: the command has exited (${this.describeExit()})`);
      }
      this.child.write(KEYS[key] ?? key);
    }
  }

  /**
   * The visible screen once everything received so far is drawn: one string a
   * row, without trailing blanks, joined with newlines (as `tmux capture-pane -p`).
   */
  async screen(): Promise<string> {
    return (await this.rows()).map((row) => row.text).join('\n');
  }

  /**
   * The visible rows: their text, and whether each continues the row above
   * because the text before it ran past the last column.
   */
  async rows(): Promise<{ text: string; wrapped: boolean }[]> {
    await new Promise<void>((resolve) => this.emulator.write('', resolve));
    const buffer = this.emulator.buffer.active;
    return Array.from({ length: this.emulator.rows }, (_, i) => {
      const line = buffer.getLine(buffer.baseY + i);
      return { text: line?.translateToString(true) ?? '', wrapped: line?.isWrapped ?? false };
    });
  }

  /** Waits until the screen matches `expected`; fails showing the last screen. */
  async until(expected: RegExp | string, timeoutMs = 15_000): Promise<string> {
    const matches = (screen: string) =>
      typeof expected === 'string' ? screen.includes(expected) : expected.test(screen);
    let screen = '';
    try {
      await waitUntil(
        `the terminal shows ${String(expected)}`,
        async () => matches((screen = await this.screen())),
        timeoutMs,
      );
    } catch (error) {
      const state = this.ended ? `the command has exited (${this.describeExit()})` : 'the command is running';
      throw new Error(`${(error as Error).message}; ${state}; the screen was:\n${screen}`, { cause: error });
    }
    return screen;
  }

  /** Waits until the command exits by itself; fails showing the screen after `timeoutMs`. */
  async exit(timeoutMs = 10_000): Promise<TerminalExit> {
    const timeout = delay(timeoutMs, undefined, { ref: false }).then(() => undefined);
    const exit = await Promise.race([this.exited, timeout]);
    if (exit) return exit;
    throw new Error(
      `the command (pid ${this.pid}) did not exit within ${timeoutMs} ms; the screen was:\n${await this.screen()}`,
    );
  }

  /**
   * Ends the command, if it still runs, with SIGHUP as a closed terminal
   * does, then SIGKILL after `graceMs`; and frees the terminal.
   */
  async kill(graceMs = 2_000): Promise<void> {
    if (!this.ended) {
      this.child.kill('SIGHUP');
      const timeout = delay(graceMs, undefined, { ref: false }).then(() => undefined);
      if (!(await Promise.race([this.exited, timeout]))) {
        this.child.kill('SIGKILL');
        await this.exited;
      }
    }
    this.emulator.dispose();
  }

  private describeExit(): string {
    const { exitCode, signal } = this.ended!;
    return signal ? `signal ${signal}` : `exit code ${exitCode}`;
  }
}
