import type { Type } from '@nestjs/common';
import { DiscoveryService, ExternalContextCreator, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { PatternHandler } from '@nestjs/microservices/enums/pattern-handler.enum.js';
import {
  PATTERN_EXTRAS_METADATA,
  PATTERN_HANDLER_METADATA,
  PATTERN_METADATA,
  TRANSPORT_METADATA,
} from '@nestjs/microservices/constants.js';
import { transformPatternToRoute } from '@nestjs/microservices/utils/transform-pattern.utils.js';
import { InvalidTaskError } from '../errors/invalid-task.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import type { TaskDefinition } from '../task/task-definition.js';
import { resolveTaskSettings } from '../task/task-settings.js';
import type { TaskSource } from '../task/task-source.js';
import { TaskRegistry } from '../task/task.registry.js';
import { checkAgainstContract, checkBackendDeclared } from '../task/declaration-checks.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { checkHandlerExtras } from './handler-extras.js';
import { handlerCall, type HandlerCall } from './handler-pipeline.js';
import { isRefusal } from './refusal.js';
import { ThreadmillContext } from './threadmill-context.js';
import { THREADMILL_TRANSPORT } from './threadmill-transport.js';

const NO_TYPES: readonly never[] = [];
const newContext = (...args: ConstructorParameters<typeof ThreadmillContext>) => new ThreadmillContext(...args);

/** Pattern metadata of one controller method. */
export interface PatternMethod {
  readonly patterns: unknown[];
  readonly transport: unknown;
  readonly extras: Record<string, unknown> | undefined;
  readonly isEvent: boolean;
}

/**
 * Finds the controller handlers `ThreadmillServer` serves (`@EventPattern`
 * and `@MessagePattern` methods for any transport or for Threadmill's) and
 * registers each pattern as a task, at discovery with the `@Task()` methods:
 * whatever runs the backend's runs (a server, a `runWorker` pool, the
 * testing module) finds them registered. A pattern's task name is Nest's
 * normalization of it, as the server's and the client's. Its queue,
 * priority, retry policy and lease come from the pattern's extras, and it
 * runs through Nest's pipeline (guards, interceptors, pipes and exception
 * filters, context type `'rpc'`), built once per handler (`handlerCall`).
 *
 * Each backend registers the handlers whose extras name it (`backend`,
 * default the default backend).
 */
export class HandlerExplorer implements TaskSource {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly contextCreator: ExternalContextCreator,
    private readonly registry: TaskRegistry,
    private readonly options: ThreadmillOptions,
  ) {}

  /**
   * Registers the backend's handlers (at boot, after the backends are linked).
   * @throws InvalidTaskError for bad extras, a request-scoped controller or a disagreement with a contract
   */
  register(): void {
    for (const wrapper of this.discovery.getControllers()) this.explore(wrapper);
  }

  private explore(wrapper: InstanceWrapper): void {
    const { instance } = wrapper;
    const type = wrapper.metatype as Type | undefined;
    if (!instance || !type) return;
    const prototype = Object.getPrototypeOf(instance) as Record<string, Function>;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const method = patternMethod(prototype[methodName]!);
      if (!method || (method.transport !== undefined && method.transport !== THREADMILL_TRANSPORT)) continue;
      const declaration = method.isEvent ? '@EventPattern()' : '@MessagePattern()';
      const site = `${type.name}#${methodName}`;
      // First: a misspelt `backend` would otherwise fail as a handler of an undeclared default backend.
      checkHandlerExtras(method.extras, method.transport, site, declaration);
      const backend = method.extras?.['backend'] ?? DEFAULT_BACKEND;
      checkBackendDeclared(backend, this.registry.backends(), site, declaration);
      if (backend !== this.registry.backend) continue;
      if (!wrapper.isDependencyTreeStatic()) {
        throw new InvalidTaskError(
          site,
          'its controller is request-scoped or durable (or depends on such a provider). A run has no request to ' +
            'scope an instance to; make the controller default-scoped, and resolve scoped dependencies inside the ' +
            'handler with moduleRef.resolve(Type, ContextIdFactory.create()).',
          declaration,
        );
      }
      const call = handlerCall(this.contextCreator, instance as object, type, methodName, wrapper.host?.token ?? '');
      for (const pattern of method.patterns) {
        const name = transformPatternToRoute(pattern as string) as string;
        this.registry.register(this.define(name, method, type, methodName, site, declaration, call));
      }
    }
  }

  private define(
    name: string,
    method: PatternMethod,
    target: Type,
    methodName: string,
    site: string,
    declaration: string,
    { handler, contextIndex }: HandlerCall,
  ): TaskDefinition {
    const { backend, queue, priority, retry, leaseTtlMs, resultTtlMs, timeoutMs } = method.extras ?? {};
    const settings = resolveTaskSettings(
      { name, backend, queue, priority, retry, leaseTtlMs, resultTtlMs, timeoutMs },
      `${site} (pattern ${name})`,
      declaration,
      this.options.queues,
    );
    checkAgainstContract(settings, site, declaration);
    return {
      kind: 'handler',
      ...settings,
      target,
      methodName,
      site,
      handler,
      contextIndex,
      createContext: newContext,
      argumentTypes: NO_TYPES,
      isRefusal,
    };
  }
}

/** The pattern metadata of a controller method, or undefined when it is no handler. */
export function patternMethod(method: Function): PatternMethod | undefined {
  const handlerType = Reflect.getMetadata(PATTERN_HANDLER_METADATA, method) as PatternHandler | undefined;
  if (handlerType === undefined) return undefined;
  return {
    patterns: (Reflect.getMetadata(PATTERN_METADATA, method) as unknown[] | undefined) ?? [],
    transport: Reflect.getMetadata(TRANSPORT_METADATA, method),
    extras: Reflect.getMetadata(PATTERN_EXTRAS_METADATA, method) as Record<string, unknown> | undefined,
    isEvent: handlerType === PatternHandler.EVENT,
  };
}
