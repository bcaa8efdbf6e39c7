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
import { RedisUnavailableError } from '../errors/redis-unavailable.error.js';
import { THREADMILL_OPTIONS, THREADMILL_RAW_OPTIONS, THREADMILL_REDIS } from '../threadmill.constants.js';
import type { ThreadmillOptions } from './threadmill-options.interface.js';
import { validateOptions } from './validate-options.js';

/** Where a connection points, with any password masked, for messages. */
function describeConnection(connections: RedisConnections): string {
  const { host, port, path, db } = connections.client.options;
  return path ? `unix:${path}` : `${host ?? 'localhost'}:${port ?? 6379}/${db ?? 0}`;
}

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
          useFactory: (options: ThreadmillOptions) => new RedisConnections(options.connection, options.alias),
          inject: [THREADMILL_OPTIONS],
        },
        {
          provide: TaskBackend,
          useFactory: (connections: RedisConnections, options: ThreadmillOptions) =>
            new RedisTaskBackend(connections, options),
          inject: [THREADMILL_REDIS, THREADMILL_OPTIONS],
        },
      ],
      exports: [THREADMILL_OPTIONS, THREADMILL_REDIS, TaskBackend],
    };
  }

  async onModuleInit(): Promise<void> {
    const { client } = this.connections;
    const timeoutMs = this.options.connectTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      // The boot fails: stop reconnecting, or the process would never exit.
      await this.connections.close();
      throw new RedisUnavailableError(describeConnection(this.connections), error);
    } finally {
      clearTimeout(timer);
    }
    this.logger.log(`Connected to Redis at ${describeConnection(this.connections)}`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connections.close();
  }
}
