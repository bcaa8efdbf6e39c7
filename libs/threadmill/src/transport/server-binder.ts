import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost, ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import type { TaskBackend } from '../backend/task-backend.js';
import type { RunEvents } from '../events/run-events.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import type { TaskRegistry } from '../task/task.registry.js';
import type { WorkerRuntime } from '../worker/worker.js';
import type { ServerBinding } from './server-binding.js';
import { ThreadmillServer } from './threadmill-server.js';
import type { ThreadmillServerOptions } from './threadmill-server.options.js';

/**
 * Binds every `ThreadmillServer` of one backend (the server's `backend`
 * option) to its `ThreadmillModule`: Nest registers each microservice's
 * transport in the container as it creates it, and the server takes its
 * backend and tasks (its handlers among them) from here.
 *
 * In a hybrid application it also drains the servers first when the
 * application closes: Nest closes connected microservices only after every
 * provider's `OnModuleDestroy` hook, but awaits the HTTP adapter's
 * `beforeClose()` before any hook runs, so the drain goes there and running
 * attempts finish with their providers alive.
 */
export class ThreadmillServerBinder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly servers: ThreadmillServer[] = [];
  private readonly subscription: Subscription;
  private readonly runtime: WorkerRuntime;
  private readonly waiting: (() => void)[] = [];
  private bootstrapped = false;
  private drainsBeforeClose = false;

  constructor(
    modules: ModulesContainer,
    private readonly adapterHost: HttpAdapterHost,
    backend: TaskBackend,
    registry: TaskRegistry,
    events: RunEvents,
    options: ThreadmillOptions,
    /** The application's `ThreadmillWorkerModule` settings, if it has one. */
    private readonly workerOptions: ThreadmillServerOptions | undefined,
  ) {
    this.runtime = { backend, registry, events, options };
    // Transports registered before this provider existed are replayed.
    this.subscription = modules.getRpcTargetRegistry<unknown>().subscribe((target) => {
      if (target instanceof ThreadmillServer && target.backend === options.name) this.bind(target);
    });
  }

  onApplicationBootstrap(): void {
    this.bootstrapped = true;
    for (const start of this.waiting.splice(0)) start();
  }

  onModuleDestroy(): void {
    this.subscription.unsubscribe();
  }

  private bind(server: ThreadmillServer): void {
    this.servers.push(server);
    const binding: ServerBinding = {
      runtime: this.runtime,
      workerOptions: this.workerOptions,
      whenReady: (start) => {
        if (this.bootstrapped) start();
        else this.waiting.push(start);
        return this.bootstrapped;
      },
    };
    server.bind(binding);
    this.drainBeforeClose();
  }

  private drainBeforeClose(): void {
    const adapter = this.adapterHost.httpAdapter as { beforeClose?: () => unknown } | undefined;
    if (!adapter || this.drainsBeforeClose) return;
    this.drainsBeforeClose = true;
    const original = adapter.beforeClose?.bind(adapter);
    adapter.beforeClose = async () => {
      await Promise.all(this.servers.map((server) => server.close()));
      await original?.();
    };
  }
}
