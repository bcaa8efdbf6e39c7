import type { InjectionToken } from '@nestjs/common';
import { TaskBackend } from '../backend/task-backend.js';
import { RunEvents } from '../events/run-events.js';
import { TaskInspector } from '../inspector/task-inspector.js';
import { TaskQueue } from '../queue/task-queue.js';
import { TaskScheduler } from '../schedule/task-scheduler.js';
import { TaskRegistry } from '../task/task.registry.js';
import {
  DEFAULT_BACKEND,
  THREADMILL_OPTIONS,
  THREADMILL_RAW_OPTIONS,
  THREADMILL_REDIS,
} from '../threadmill.constants.js';

export { DEFAULT_BACKEND };

/** The injection tokens of one backend's providers. */
export interface BackendTokens {
  /** The validated options ({@link ThreadmillOptions}). */
  readonly options: InjectionToken;
  /** The options as given to `forRoot` / `forRootAsync`, before validation. */
  readonly rawOptions: InjectionToken;
  /** The Redis connections (`RedisConnections`). */
  readonly redis: InjectionToken;
  readonly backend: InjectionToken;
  readonly events: InjectionToken;
  readonly registry: InjectionToken;
  readonly queue: InjectionToken;
  readonly inspector: InjectionToken;
  /** Internal services: discovery, handler registration, server binding, the boot-time declaration. */
  readonly scheduler: InjectionToken;
  readonly explorer: InjectionToken;
  readonly handlers: InjectionToken;
  readonly binder: InjectionToken;
  readonly declaration: InjectionToken;
  readonly connection: InjectionToken;
}

/**
 * The default backend keeps the class tokens it always had (`TaskQueue`,
 * `TaskInspector`, ...), so an application with one backend injects them by
 * type; a named backend's tokens are strings that carry its name.
 */
const DEFAULT_TOKENS: BackendTokens = {
  options: THREADMILL_OPTIONS,
  rawOptions: THREADMILL_RAW_OPTIONS,
  redis: THREADMILL_REDIS,
  backend: TaskBackend,
  events: RunEvents,
  registry: TaskRegistry,
  queue: TaskQueue,
  inspector: TaskInspector,
  scheduler: TaskScheduler,
  explorer: 'threadmill:default:TaskExplorer',
  handlers: 'threadmill:default:HandlerExplorer',
  binder: 'threadmill:default:ThreadmillServerBinder',
  declaration: 'threadmill:default:BackendDeclaration',
  connection: 'threadmill:default:BackendConnection',
};

const isDefault = (name: string | undefined) => name === undefined || name === DEFAULT_BACKEND;

/** The injection tokens of backend `name` (the default one when omitted). */
export function backendTokens(name?: string): BackendTokens {
  if (isDefault(name)) return DEFAULT_TOKENS;
  const token = (role: string) => `threadmill:${name}:${role}`;
  return {
    options: token('ThreadmillOptions'),
    rawOptions: token('RawOptions'),
    redis: token('RedisConnections'),
    backend: token('TaskBackend'),
    events: token('RunEvents'),
    registry: token('TaskRegistry'),
    queue: token('TaskQueue'),
    inspector: token('TaskInspector'),
    scheduler: token('TaskScheduler'),
    explorer: token('TaskExplorer'),
    handlers: token('HandlerExplorer'),
    binder: token('ThreadmillServerBinder'),
    declaration: token('BackendDeclaration'),
    connection: token('BackendConnection'),
  };
}

/**
 * Injection token of backend `name`'s {@link TaskQueue}: the class itself for
 * the default backend, `'threadmill:<name>:TaskQueue'` for a named one. Use it
 * with `@Inject()`, `moduleRef.get()` or `overrideProvider()`.
 */
export function getTaskQueueToken(name?: string): InjectionToken {
  return backendTokens(name).queue;
}

/** Injection token of backend `name`'s {@link TaskScheduler} (the class for the default backend). */
export function getTaskSchedulerToken(name?: string): InjectionToken {
  return backendTokens(name).scheduler;
}

/** Injection token of backend `name`'s {@link TaskInspector} (the class for the default backend). */
export function getTaskInspectorToken(name?: string): InjectionToken {
  return backendTokens(name).inspector;
}

/** Injection token of backend `name`'s `TaskBackend` (the class for the default backend), to override it in tests. */
export function getTaskBackendToken(name?: string): InjectionToken {
  return backendTokens(name).backend;
}

/** Injection token of backend `name`'s validated, defaulted `ThreadmillOptions`. */
export function getThreadmillOptionsToken(name?: string): InjectionToken {
  return backendTokens(name).options;
}

/** Injection token of backend `name`'s {@link RunEvents}: the runs its producers and workers report. */
export function getRunEventsToken(name?: string): InjectionToken {
  return backendTokens(name).events;
}
