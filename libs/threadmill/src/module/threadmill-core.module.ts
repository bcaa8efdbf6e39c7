import {
  Global,
  Inject,
  Logger,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Provider,
} from '@nestjs/common';
import { RedisConnections } from '../backend/redis/redis-connections.js';
import { RedisTaskBackend } from '../backend/redis/redis.backend.js';
import { TaskBackend } from '../backend/task-backend.js';
import { RunEvents } from '../events/run-events.js';
import { THREADMILL_OPTIONS, THREADMILL_RAW_OPTIONS, THREADMILL_REDIS } from '../threadmill.constants.js';
import { connectBackend } from './connect-backend.js';
import type { ThreadmillOptions } from './threadmill-options.interface.js';
import { validateOptions } from './validate-options.js';

/**
 * Owns the Redis connections and the backend. Global, so Nest initialises it
 * before the application's modules and destroys it after them: Redis opens
 * first and closes last, after workers have drained.
 */
@Global()
@Module({})
export class ThreadmillCoreModule implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Threadmill');

  constructor(
    @Inject(THREADMILL_REDIS) private readonly connections: RedisConnections,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
    private readonly backend: TaskBackend,
  ) {}

  /** @param rawOptions provider of the unvalidated options (from forRoot or forRootAsync) */
  static register(rawOptions: Provider[], imports: DynamicModule['imports'] = []): DynamicModule {
    return {
      module: ThreadmillCoreModule,
      imports,
      providers: [
        ...rawOptions,
        { provide: THREADMILL_OPTIONS, useFactory: validateOptions, inject: [THREADMILL_RAW_OPTIONS] },
        {
          provide: THREADMILL_REDIS,
          useFactory: (options: ThreadmillOptions) =>
            new RedisConnections(options.connection, options.alias, options.connectTimeoutMs),
          inject: [THREADMILL_OPTIONS],
        },
        {
          provide: TaskBackend,
          useFactory: (connections: RedisConnections, options: ThreadmillOptions) =>
            new RedisTaskBackend(connections, options),
          inject: [THREADMILL_REDIS, THREADMILL_OPTIONS],
        },
        // One per application: producers and the worker report into it, listeners (metrics) subscribe.
        { provide: RunEvents, useValue: new RunEvents() },
      ],
      exports: [THREADMILL_OPTIONS, THREADMILL_REDIS, TaskBackend, RunEvents],
    };
  }

  async onModuleInit(): Promise<void> {
    await connectBackend(this.connections, this.backend, this.options, this.logger);
    this.logger.log(`Connected to Redis at ${this.connections.describe()}`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connections.close();
  }
}
