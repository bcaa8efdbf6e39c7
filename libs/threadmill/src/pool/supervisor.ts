import { Logger } from '@nestjs/common';
import { fork, type ChildProcess } from 'node:child_process';
import { isEndingMessage, isReadyMessage, POOL_SLOT_ENV, type StopMessage } from './pool-message.js';

/** How the supervisor starts its worker processes. */
export interface SupervisorSettings {
  readonly workers: number;
  /** Script the pool members run: the application's worker entry point. */
  readonly script: string;
  readonly argv: readonly string[];
  readonly execArgv: readonly string[];
  /** The members' `--shutdown-timeout`; stragglers are killed some time after it. */
  readonly shutdownTimeoutMs: number;
  /** More environment for a member, read at each fork (what the supervisor knows by then). */
  readonly memberEnv?: () => Record<string, string>;
}

/**
 * A process that exits before it is ready, or this soon after, counts towards
 * a crash loop. Counted from readiness, not from the fork: a boot that is slow
 * (a loaded host, a large app) must not hide a process that fails at boot.
 */
const FAST_EXIT_MS = 5_000;
/** Restart delay after a process that had run a while dies. */
const FIRST_RESTART_MS = 100;
const MAX_RESTART_MS = 30_000;
/** Consecutive fast exits from which a slot is reported as crash-looping. */
const CRASH_LOOP_EXITS = 3;
/** How long past the members' shutdown timeout a stop waits before SIGKILL. */
const KILL_GRACE_MS = 5_000;

class Slot {
  process: ChildProcess | undefined;
  /** When it said it was ready (`Date.now()`), or undefined while it boots. */
  readyAt: number | undefined;
  fastExits = 0;
  restartTimer: NodeJS.Timeout | undefined;
  ending: 'empty' | 'max-tasks' | undefined;
  /** It handles stops itself (it said so over IPC); before that a signal would kill it mid-boot. */
  ready = false;
  /** A graceful stop came while it booted: it is asked to stop once ready. */
  stopWhenReady = false;
  finished = false;
  cleanExit = true;

  constructor(readonly index: number) {}
}

/**
 * The pool's supervisor: forks `workers` processes (each a consumer with its
 * own slots), restarts one that dies (within a second, backing off when a
 * slot crash-loops), recycles one that reached `--max-tasks`, and stops them
 * all on request. `done` resolves with the pool's exit code once every
 * process exited after `stop()`, or once all found their queues empty.
 */
export class Supervisor {
  private readonly logger = new Logger('Threadmill');
  private readonly slots: Slot[];
  private stopping: 'graceful' | 'hard' | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private resolveDone!: (code: number) => void;
  readonly done = new Promise<number>((resolve) => (this.resolveDone = resolve));

  constructor(
    private readonly settings: SupervisorSettings,
    /** Told of every pool member started (the metrics endpoint follows them). */
    private readonly onSpawn: (child: ChildProcess) => void = () => {},
  ) {
    this.slots = Array.from({ length: settings.workers }, (_, i) => new Slot(i));
  }

  start(): void {
    for (const slot of this.slots) this.spawn(slot);
  }

  /**
   * First call: asks every member to drain and kills stragglers after their
   * shutdown timeout. Second call: stops hard.
   */
  stop(): void {
    const hard = this.stopping !== undefined;
    this.stopping = hard ? 'hard' : 'graceful';
    for (const slot of this.slots) clearTimeout(slot.restartTimer);
    const live = this.slots.filter((slot) => slot.process);
    // Over IPC (see StopMessage). A member still booting is asked once it
    // listens; the kill timer below still bounds how long that may take, and
    // a hard stop does not wait for it.
    for (const slot of live) {
      if (slot.ready) this.tell(slot, { type: 'threadmill:stop', hard });
      else if (hard) slot.process!.kill('SIGTERM');
      else slot.stopWhenReady = true;
    }
    clearTimeout(this.killTimer);
    this.killTimer = setTimeout(
      () => {
        for (const slot of this.slots) slot.process?.kill('SIGKILL');
      },
      hard ? KILL_GRACE_MS : this.settings.shutdownTimeoutMs + KILL_GRACE_MS,
    );
    this.killTimer.unref();
    this.settleIfAllExited();
  }

  private spawn(slot: Slot): void {
    const child = fork(this.settings.script, [...this.settings.argv], {
      env: { ...process.env, ...this.settings.memberEnv?.(), [POOL_SLOT_ENV]: String(slot.index) },
      execArgv: [...this.settings.execArgv],
      stdio: 'inherit',
    });
    slot.process = child;
    slot.readyAt = undefined;
    slot.ending = undefined;
    slot.ready = false;
    slot.stopWhenReady = false;
    child.on('message', (message) => {
      if (isEndingMessage(message)) slot.ending = message.reason;
      if (isReadyMessage(message)) {
        slot.ready = true;
        slot.readyAt = Date.now();
        if (slot.stopWhenReady) this.tell(slot, { type: 'threadmill:stop', hard: false });
      }
    });
    child.once('exit', (code, signal) => this.onExit(slot, code, signal));
    this.onSpawn(child);
    this.logger.log(`Started worker slot ${slot.index} (pid ${child.pid})`);
  }

  private onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const pid = slot.process?.pid;
    slot.process = undefined;
    if (this.stopping) {
      if (code !== 0) slot.cleanExit = false;
      this.settleIfAllExited();
      return;
    }
    if (code === 0 && slot.ending === 'empty') {
      slot.finished = true;
      this.logger.log(`Worker slot ${slot.index} (pid ${pid}) found its queues empty and exited`);
      if (this.slots.every((s) => s.finished)) this.resolveDone(0);
      return;
    }
    if (code === 0 && slot.ending === 'max-tasks') {
      this.logger.log(`Recycling worker slot ${slot.index} (pid ${pid}): it reached --max-tasks`);
      slot.fastExits = 0;
      this.spawn(slot);
      return;
    }
    const lived = slot.readyAt === undefined ? 0 : Date.now() - slot.readyAt;
    slot.fastExits = lived < FAST_EXIT_MS ? slot.fastExits + 1 : 0;
    const delay = slot.fastExits === 0 ? FIRST_RESTART_MS : Math.min(500 * 2 ** (slot.fastExits - 1), MAX_RESTART_MS);
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    if (slot.fastExits >= CRASH_LOOP_EXITS) {
      this.logger.error(
        `Worker slot ${slot.index} is crash-looping: ${slot.fastExits} exits in a row before it was ready or ` +
          `within ${FAST_EXIT_MS / 1000} s after (pid ${pid} ${how}); restarting in ${delay} ms`,
      );
    } else {
      this.logger.warn(`Worker slot ${slot.index} (pid ${pid}) ${how}; restarting in ${delay} ms`);
    }
    slot.restartTimer = setTimeout(() => {
      if (!this.stopping) this.spawn(slot);
    }, delay);
  }

  /** Sends `message` to a member; a signal carries the stop when its channel is gone. */
  private tell(slot: Slot, message: StopMessage): void {
    const child = slot.process;
    if (!child) return;
    if (!child.connected) {
      child.kill('SIGTERM');
      return;
    }
    child.send(message, (error) => {
      if (error && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    });
  }

  private settleIfAllExited(): void {
    if (!this.stopping || this.slots.some((slot) => slot.process)) return;
    clearTimeout(this.killTimer);
    this.resolveDone(this.stopping === 'graceful' && this.slots.every((slot) => slot.cleanExit) ? 0 : 1);
  }
}
