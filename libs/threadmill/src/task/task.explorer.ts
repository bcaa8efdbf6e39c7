import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { InvalidTaskError } from '../errors/invalid-task.error.js';
import type { ThreadmillOptions } from '../module/threadmill-options.interface.js';
import { NAME_PATTERN } from '../module/threadmill-options.schema.js';
import { TASK_METADATA, THREADMILL_OPTIONS } from '../threadmill.constants.js';
import { argumentTypes } from './task-arguments.js';
import { TaskContext } from './task-context.js';
import type { TaskDefinition } from './task-definition.js';
import type { TaskOptions } from './task-options.interface.js';
import { TaskRegistry } from './task.registry.js';

/**
 * Finds every `@Task()` method on the application's providers at boot and
 * registers it. Invalid declarations and duplicate names fail the boot.
 */
@Injectable()
export class TaskExplorer implements OnModuleInit {
  private readonly logger = new Logger('Threadmill');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: TaskRegistry,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper);
    this.logger.log(`Registered ${this.registry.names().length} task(s)`);
  }

  private explore(wrapper: InstanceWrapper): void {
    const type = wrapper.metatype;
    if (typeof type !== 'function' || !type.prototype) return;
    const prototype = wrapper.instance ? Object.getPrototypeOf(wrapper.instance) : type.prototype;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const options = this.reflector.get<TaskOptions | undefined>(TASK_METADATA, prototype[methodName]);
      if (!options) continue;
      const target = wrapper.instance?.constructor ?? type;
      const site = `${target.name}#${methodName}`;
      if (!wrapper.isDependencyTreeStatic() || !wrapper.instance) {
        throw new InvalidTaskError(
          site,
          'tasks must live on singleton providers, but this provider is request- or transient-scoped. ' +
            'Move the task to a default-scoped provider.',
        );
      }
      this.registry.register(this.define(wrapper.instance, target, prototype, methodName, site, options));
    }
  }

  private define(
    instance: Record<string, Function>,
    target: Function,
    prototype: object,
    methodName: string,
    site: string,
    options: TaskOptions,
  ): TaskDefinition {
    const name = options.name ?? `${target.name}.${methodName}`;
    const queue = options.queue ?? 'default';
    const priority = options.priority ?? 0;
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200) {
      throw new InvalidTaskError(
        site,
        `name must be a non-empty string of at most 200 characters, got ${JSON.stringify(name)}.`,
      );
    }
    if (!NAME_PATTERN.test(queue) || !this.options.queues.includes(queue)) {
      throw new InvalidTaskError(
        site,
        `queue "${queue}" is not one of the module's queues (${this.options.queues.join(', ')}). ` +
          `Add it to ThreadmillModule.forRoot({ queues: [...] }).`,
      );
    }
    if (!Number.isInteger(priority) || priority < -100 || priority > 100) {
      throw new InvalidTaskError(site, `priority must be an integer from -100 to 100, got ${priority}.`);
    }
    if (options.leaseTtlMs !== undefined && (!Number.isInteger(options.leaseTtlMs) || options.leaseTtlMs < 100)) {
      throw new InvalidTaskError(site, `leaseTtlMs must be an integer of at least 100 ms, got ${options.leaseTtlMs}.`);
    }
    const retry = options.retry;
    if (retry !== undefined && typeof retry !== 'function' && typeof retry?.delayFor !== 'function') {
      throw new InvalidTaskError(
        site,
        'retry must be a function (context) => delayMs | null or an object with delayFor(), such as new ExponentialBackoff().',
      );
    }
    const paramTypes: unknown[] = Reflect.getMetadata('design:paramtypes', prototype, methodName) ?? [];
    return {
      name,
      queue,
      priority,
      retry,
      leaseTtlMs: options.leaseTtlMs,
      target,
      methodName,
      site,
      handler: instance[methodName]!.bind(instance) as TaskDefinition['handler'],
      contextIndex: paramTypes.indexOf(TaskContext),
      argumentTypes: argumentTypes(paramTypes),
    };
  }
}
