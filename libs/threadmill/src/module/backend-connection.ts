import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { RedisConnections } from '../backend/redis/redis-connections.js';
import type { TaskBackend } from '../backend/task-backend.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { connectBackend } from '../backend/connect-backend.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';

/**
 * Opens one backend's Redis connections when its core module initialises
 * and closes them when the application shuts down. It lives in the global
 * core module, which Nest initialises before the application's modules. At
 * shutdown it closes them in `onApplicationShutdown`, after every provider's
 * `onModuleDestroy` (where workers drain) and `beforeApplicationShutdown`
 * (where `TaskQueue` stops waiting): `ThreadmillModule` is global too, so
 * Nest may run this module's shutdown hooks before that module's.
 */
export class BackendConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Threadmill');

  constructor(
    private readonly connections: RedisConnections,
    private readonly backend: TaskBackend,
    private readonly options: ThreadmillOptions,
  ) {}

  private connecting?: Promise<void>;

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  /**
   * Connects the backend once, for whichever asks first: its own module's
   * initialisation, or a provider of another module that must write to the
   * backend in its own `onModuleInit` (the task explorer writes the tasks'
   * limits), which Nest may run first. A partitioned backend knows where its
   * partitions are only once connected.
   */
  connect(): Promise<void> {
    return (this.connecting ??= connectBackend(this.connections, this.backend, this.options, this.logger).then(() => {
      const which = this.options.name === DEFAULT_BACKEND ? '' : `Backend "${this.options.name}": `;
      this.logger.log(`${which}Connected to Redis at ${this.connections.describe()}`);
    }));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connections.close();
  }
}
