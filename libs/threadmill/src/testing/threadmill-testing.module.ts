import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { TaskBackend } from '../backend/task-backend.js';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { RunEvents } from '../events/run-events.js';
import { TaskInspector } from '../inspector/task-inspector.js';
import type { ThreadmillOptions } from '../module/threadmill-options.interface.js';
import { validateOptions } from '../module/validate-options.js';
import { TaskQueue } from '../queue/task-queue.js';
import { TaskExplorer } from '../task/task.explorer.js';
import { TaskRegistry } from '../task/task.registry.js';
import { THREADMILL_OPTIONS, THREADMILL_RAW_OPTIONS } from '../threadmill.constants.js';
import { HandlerExplorer } from '../transport/handler-explorer.js';
import { ThreadmillServerBinder } from '../transport/server-binder.js';
import { InMemoryTaskBackend } from './memory/in-memory.backend.js';
import { discoverQueues } from './testing-queues.js';
import { threadmillImportOf } from './threadmill-import.js';
import {
  THREADMILL_TESTING_SETTINGS,
  type ThreadmillTestingModuleOptions,
  type ThreadmillTestingSettings,
} from './testing-options.js';
import { ThreadmillTesting } from './threadmill-testing.js';

const WHERE = 'ThreadmillTestingModule.forRoot()';

/** Splits the testing options from the module options, and checks them. */
function testingSettings(options: ThreadmillTestingModuleOptions): {
  settings: ThreadmillTestingSettings;
  moduleOptions: ThreadmillTestingModuleOptions;
} {
  const { mode = 'immediate', maxRuns = 1000, ...moduleOptions } = options ?? {};
  const problems: string[] = [];
  if (mode !== 'immediate' && mode !== 'manual') {
    problems.push(`mode: got ${JSON.stringify(mode)}; must be 'immediate' or 'manual'`);
  }
  if (!Number.isInteger(maxRuns) || maxRuns < 1) {
    problems.push(`maxRuns: got ${JSON.stringify(maxRuns)}; must be an integer of at least 1`);
  }
  if (problems.length > 0) throw new ThreadmillConfigError(problems, WHERE);
  return { settings: { mode, maxRuns }, moduleOptions };
}

/**
 * `ThreadmillModule` for tests: the same providers (`TaskQueue`,
 * `TaskInspector`, `TaskRegistry`, discovery of `@Task()` methods and
 * handlers, the options token) over an {@link InMemoryTaskBackend}, with no
 * Redis connection at all, and {@link ThreadmillTesting} to look at and run
 * what was enqueued.
 *
 * @example
 * ```ts
 * // A whole app, its ThreadmillModule replaced:
 * const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
 *   .overrideModule(ThreadmillTestingModule.importedBy(AppModule))
 *   .useModule(ThreadmillTestingModule.forRoot({ mode: 'manual' }))
 *   .compile();
 * ```
 */
@Module({})
export class ThreadmillTestingModule {
  /**
   * The `ThreadmillModule.forRoot()` (or `forRootAsync()`) module `root`
   * imports, found through its imports: what `overrideModule()` takes to
   * replace it. Nest matches an override by identity, and each `forRoot()`
   * call returns a new object, so `overrideModule(ThreadmillModule)` would
   * match nothing.
   * @throws ThreadmillConfigError when `root` imports none, or several
   */
  static importedBy(root: Type | DynamicModule): DynamicModule {
    return threadmillImportOf(root);
  }

  /**
   * @param options those of `ThreadmillModule.forRoot()` (`connection` is
   *   ignored; `queues` defaults to every queue the app's tasks name) and
   *   `mode`, `maxRuns`
   * @throws ThreadmillConfigError for a bad option, naming each one
   */
  static forRoot(options: ThreadmillTestingModuleOptions = {}): DynamicModule {
    const { settings, moduleOptions } = testingSettings(options);
    const resolveOptions = (discovery: DiscoveryService, scanner: MetadataScanner): ThreadmillOptions => {
      const resolved = validateOptions(moduleOptions, WHERE);
      if (moduleOptions.queues === undefined) return { ...resolved, queues: discoverQueues(discovery, scanner) };
      return resolved;
    };
    return {
      module: ThreadmillTestingModule,
      global: moduleOptions.isGlobal ?? true,
      imports: [DiscoveryModule],
      providers: [
        { provide: THREADMILL_TESTING_SETTINGS, useValue: settings },
        { provide: THREADMILL_RAW_OPTIONS, useValue: moduleOptions },
        { provide: THREADMILL_OPTIONS, useFactory: resolveOptions, inject: [DiscoveryService, MetadataScanner] },
        {
          provide: TaskBackend,
          useFactory: (resolved: ThreadmillOptions) => new InMemoryTaskBackend(resolved),
          inject: [THREADMILL_OPTIONS],
        },
        { provide: RunEvents, useValue: new RunEvents() },
        TaskRegistry,
        TaskExplorer,
        TaskQueue,
        TaskInspector,
        HandlerExplorer,
        ThreadmillServerBinder,
        ThreadmillTesting,
      ],
      exports: [THREADMILL_OPTIONS, TaskBackend, RunEvents, TaskQueue, TaskInspector, TaskRegistry, ThreadmillTesting],
    };
  }
}
