import { Module, type DynamicModule, type InjectionToken, type Type } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { RunEvents } from '../events/run-events.js';
import { backendName } from '../module/backend-name.js';
import { backendProviders } from '../module/backend-providers.js';
import { backendTokens } from '../module/backend-tokens.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { validateOptions } from '../options/validate-options.js';
import type { TaskBackend } from '../backend/task-backend.js';
import type { TaskRegistry } from '../task/task.registry.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { InMemoryTaskBackend } from './memory/in-memory.backend.js';
import { discoverQueues } from './testing-queues.js';
import { threadmillImportOf } from './threadmill-import.js';
import type { ThreadmillTestingModuleOptions, ThreadmillTestingSettings } from './testing-options.js';
import { ThreadmillTesting } from './threadmill-testing.js';

/**
 * Injection token of the {@link ThreadmillTesting} of testing backend `name`:
 * the class itself for the default backend, `'threadmill:<name>:ThreadmillTesting'`
 * for a named one (`ThreadmillTestingModule.forRoot({ name })`).
 */
export function getThreadmillTestingToken(name?: string): InjectionToken {
  return name === undefined || name === DEFAULT_BACKEND ? ThreadmillTesting : `threadmill:${name}:ThreadmillTesting`;
}

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
    const name = backendName(options?.name, WHERE);
    const { settings, moduleOptions } = testingSettings(options);
    const t = backendTokens(name);
    const resolveOptions = (discovery: DiscoveryService, scanner: MetadataScanner): ThreadmillOptions => {
      const resolved = validateOptions({ ...moduleOptions, name }, WHERE);
      if (moduleOptions.queues !== undefined) return resolved;
      return { ...resolved, queues: discoverQueues(discovery, scanner, name) };
    };
    // Above the storage, the very providers ThreadmillModule has (discovery,
    // TaskQueue, TaskInspector, handlers, server binding), under the same tokens.
    const above = backendProviders(name);
    const testing = getThreadmillTestingToken(name);
    const memory = `threadmill:${name ?? DEFAULT_BACKEND}:InMemoryTaskBackend`;
    return {
      module: ThreadmillTestingModule,
      global: moduleOptions.isGlobal ?? true,
      imports: [DiscoveryModule],
      providers: [
        { provide: t.rawOptions, useValue: moduleOptions },
        { provide: t.options, useFactory: resolveOptions, inject: [DiscoveryService, MetadataScanner] },
        {
          provide: memory,
          useFactory: (resolved: ThreadmillOptions) => new InMemoryTaskBackend(resolved),
          inject: [t.options],
        },
        // Overridable like any backend token; ThreadmillTesting refuses to run without the memory backend behind it.
        { provide: t.backend, useExisting: memory },
        { provide: t.events, useFactory: () => new RunEvents() },
        ...above.providers,
        {
          provide: testing,
          useFactory: (
            backend: InMemoryTaskBackend,
            served: TaskBackend,
            registry: TaskRegistry,
            resolved: ThreadmillOptions,
          ) => new ThreadmillTesting(backend, served, registry, settings, resolved),
          inject: [memory, t.backend, t.registry, t.options],
        },
      ],
      exports: [t.options, t.backend, t.events, ...above.exports, testing],
    };
  }
}
