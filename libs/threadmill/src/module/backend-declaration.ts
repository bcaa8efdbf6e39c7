import type { DiscoveryService } from '@nestjs/core';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import type { TaskRegistry } from '../task/task.registry.js';

/**
 * One backend of the application, as a provider of its `ThreadmillModule`:
 * at boot, each backend finds the others' through discovery, to refuse a
 * second module of its name, a task bound to a backend no module declares,
 * and an enqueue through the wrong backend's queue.
 */
export class BackendDeclaration {
  constructor(readonly registry: TaskRegistry) {}

  get name(): string {
    return this.registry.backend;
  }
}

/**
 * Links `registry` to the registries of the application's other backends.
 * @throws ThreadmillConfigError when another module declares the same backend name
 */
export function linkBackends(discovery: DiscoveryService, registry: TaskRegistry): void {
  const declarations = discovery
    .getProviders()
    .map((wrapper) => wrapper.instance as unknown)
    .filter((instance): instance is BackendDeclaration => instance instanceof BackendDeclaration);
  const namesakes = declarations.filter((declaration) => declaration.name === registry.backend);
  if (namesakes.length > 1) {
    throw new ThreadmillConfigError([
      `name: ${namesakes.length} ThreadmillModules declare backend "${registry.backend}"; each backend is one module. ` +
        'Import ThreadmillModule.forRoot() / forRootAsync() once per backend, in the root module, and give the others ' +
        'their own name',
    ]);
  }
  registry.link(declarations.map((declaration) => declaration.registry));
}
