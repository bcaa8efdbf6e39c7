import { Logger, type OnModuleInit } from '@nestjs/common';
import {
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants.js';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import type { TaskBackend } from '../backend/task-backend.js';
import { InvalidScheduleError } from '../errors/invalid-schedule.error.js';
import { writeTaskLimits } from './write-task-limits.js';
import { InvalidTaskError } from '../errors/invalid-task.error.js';
import { encodeSpec } from '../schedule/schedule-spec.js';
import { linkBackends } from './backend-declaration.js';
import type { BackendConnection } from './backend-connection.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { DEFAULT_BACKEND, TASK_METADATA } from '../threadmill.constants.js';
import { argumentTypes } from '../task/task-arguments.js';
import { TaskContext } from '../task/task-context.js';
import type { TaskSource } from '../task/task-source.js';
import { taskSignature } from '../task/task-signature.js';
import { checkAgainstContract, checkBackendDeclared } from '../task/declaration-checks.js';
import type { TaskDefinition } from '../task/task-definition.js';
import type { TaskMetadata } from '../task/task.decorator.js';
import { resolveTaskSettings, type TaskSettings } from '../task/task-settings.js';
import { checkTaskOptionKeys } from '../task/task-option-keys.js';
import { TaskRegistry } from '../task/task.registry.js';

/** Nest's enhancer decorators, which apply to handlers but not to `@Task()` methods. */
const ENHANCERS: readonly [string, string][] = [
  [GUARDS_METADATA, '@UseGuards()'],
  [INTERCEPTORS_METADATA, '@UseInterceptors()'],
  [PIPES_METADATA, '@UsePipes()'],
  [EXCEPTION_FILTERS_METADATA, '@UseFilters()'],
];

const newTaskContext = (...args: ConstructorParameters<typeof TaskContext>) => new TaskContext(...args);

/**
 * Finds the `@Task()` methods of one backend on the application's providers
 * at boot and registers them, then the tasks of its other sources (the Nest
 * handlers): each backend's explorer takes the tasks bound to it
 * (`@Task({ backend })`, default the default backend) and leaves the
 * others' to theirs. Invalid declarations, duplicate names, tasks bound to a
 * backend no module declares and tasks that disagree with their contract
 * fail the boot.
 */
export class TaskExplorer implements OnModuleInit {
  private readonly logger = new Logger('Threadmill');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: TaskRegistry,
    private readonly options: ThreadmillOptions,
    private readonly backend?: TaskBackend,
    private readonly connection?: Pick<BackendConnection, 'connect'>,
    private readonly sources: readonly TaskSource[] = [],
  ) {}

  async onModuleInit(): Promise<void> {
    linkBackends(this.discovery, this.registry);
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper);
    for (const source of this.sources) source.register();
    const backend = this.registry.backend === DEFAULT_BACKEND ? '' : ` for backend "${this.registry.backend}"`;
    this.logger.log(`Registered ${this.registry.names().length} task(s)${backend}`);
    // Before any worker claims (they start at bootstrap): its limits are the code's.
    if (this.backend) {
      // Nest may initialise this module before the backend's connection: connected first, whichever runs first.
      await this.connection?.connect();
      await writeTaskLimits(this.backend, this.registry);
    }
  }

  private explore(wrapper: InstanceWrapper): void {
    const type = wrapper.metatype;
    if (typeof type !== 'function' || !type.prototype) return;
    const prototype = wrapper.instance ? Object.getPrototypeOf(wrapper.instance) : type.prototype;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const metadata = this.reflector.get<TaskMetadata | undefined>(TASK_METADATA, prototype[methodName]);
      if (!metadata) continue;
      const target = wrapper.instance?.constructor ?? type;
      const site = `${target.name}#${methodName}`;
      // First: a misspelt `backend` would otherwise fail as a task of an undeclared default backend.
      const { contract, ...options } = metadata;
      checkTaskOptionKeys(options, contract?.name, site);
      const backend = contract?.settings.backend ?? options.backend ?? DEFAULT_BACKEND;
      checkBackendDeclared(backend, this.registry.backends(), site, '@Task()');
      if (backend !== this.registry.backend) continue;
      if (!wrapper.isDependencyTreeStatic() || !wrapper.instance) {
        throw new InvalidTaskError(
          site,
          'its provider is request-scoped, transient or durable (or depends on such a provider). A run has no ' +
            'request to scope an instance to, and Threadmill calls each task on one instance. Make the provider ' +
            'default-scoped; where a task needs a scoped dependency, inject ModuleRef and resolve it inside the ' +
            'task with moduleRef.resolve(Type, ContextIdFactory.create()).',
        );
      }
      for (const [key, decorator] of ENHANCERS) {
        if (this.reflector.getAllAndMerge<unknown[]>(key, [prototype[methodName], target]).length > 0) {
          throw new InvalidTaskError(
            site,
            `${decorator} applies to Nest handlers, not to @Task() methods, which Threadmill calls directly. ` +
              'Serve the task as a handler on a controller (@EventPattern or @MessagePattern with ThreadmillServer) ' +
              'to run it through guards, interceptors, pipes and filters, or remove the decorator.',
          );
        }
      }
      const definition = this.define(wrapper.instance, target, prototype, methodName, site, metadata);
      this.registry.register(definition);
      if (metadata.schedule !== undefined) this.declareSchedule(definition, metadata, site);
    }
  }

  private define(
    instance: Record<string, Function>,
    target: Function,
    prototype: object,
    methodName: string,
    site: string,
    metadata: TaskMetadata,
  ): TaskDefinition {
    const settings = this.settings(metadata, `${target.name}.${methodName}`, site);
    const paramTypes: unknown[] = Reflect.getMetadata('design:paramtypes', prototype, methodName) ?? [];
    const contextIndex = paramTypes.indexOf(TaskContext);
    const dtoTypes = argumentTypes(paramTypes);
    return {
      kind: 'method',
      ...settings,
      target,
      methodName,
      site,
      handler: instance[methodName]!.bind(instance) as TaskDefinition['handler'],
      contextIndex,
      createContext: newTaskContext,
      argumentTypes: dtoTypes,
      signature: taskSignature(instance[methodName]!, paramTypes, dtoTypes, contextIndex),
    };
  }

  /** Checks and records the schedule a task declares (`@Task({ schedule })`): a bad one fails the boot. */
  private declareSchedule(definition: TaskDefinition, metadata: TaskMetadata, site: string): void {
    const { id = definition.name, args, ...timing } = metadata.schedule ?? {};
    try {
      const { spec, def, digest } = encodeSpec(id, timing, args, definition, this.options);
      this.registry.declareSchedule({ id, digest, def, queue: spec.queue }, site);
    } catch (error) {
      if (error instanceof InvalidScheduleError) throw new InvalidTaskError(site, error.message);
      throw error;
    }
  }

  /** The task's settings: from its contract (`@Task(contract)`) or its options, checked against any contract of its name. */
  private settings(metadata: TaskMetadata, defaultName: string, site: string): TaskSettings {
    const { contract, ...options } = metadata;
    if (contract) {
      return resolveTaskSettings(
        {
          ...contract.settings,
          retry: options.retry,
          resultTtlMs: options.resultTtlMs,
          timeoutMs: options.timeoutMs,
          limit: options.limit,
        },
        site,
        '@Task()',
        this.options.queues,
      );
    }
    const settings = resolveTaskSettings(
      { ...options, name: options.name ?? defaultName },
      site,
      '@Task()',
      this.options.queues,
    );
    checkAgainstContract(settings, site, '@Task()');
    return settings;
  }
}
