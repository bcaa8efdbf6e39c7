import type { Type } from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA } from '@nestjs/common/constants.js';
import type { ExternalContextCreator } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { PARAM_ARGS_METADATA } from '@nestjs/microservices/constants.js';
import { RpcParamtype } from '@nestjs/microservices/enums/rpc-paramtype.enum.js';
import { catchError, isObservable, type Observable } from 'rxjs';

/** How the executor calls a handler: with the run's payload, and its context when `contextIndex` is 1. */
export interface HandlerCall {
  readonly handler: (...args: unknown[]) => unknown;
  /** 1 when the call takes the run's `ThreadmillContext` second, -1 when it takes the payload alone. */
  readonly contextIndex: 1 | -1;
}

/** One entry of a handler's parameter metadata (`@Payload()`, `@Ctx()`, a custom decorator). */
interface ParamEntry {
  readonly index: number;
  readonly data?: unknown;
  readonly pipes?: readonly unknown[];
}

/**
 * The parameters of a handler that declares none with `@Payload()` or
 * `@Ctx()`: the payload alone, as Nest's RPC transports pass it, so that
 * global pipes reach it.
 */
const DEFAULT_ARGS_METADATA = 'threadmill:default-handler-args';
const DEFAULT_ARGS: Record<string, ParamEntry> = {
  [`${RpcParamtype.PAYLOAD}:0`]: { index: 0, data: undefined, pipes: [] },
};

/** Reads `@Payload()` (or one of its fields) and `@Ctx()` from a call's (payload, context). */
const PARAMS_FACTORY = {
  exchangeKeyForValue(type: number, data: unknown, args: unknown[]): unknown {
    if (type === RpcParamtype.PAYLOAD) {
      const payload = args[0] as Record<string, unknown> | undefined | null;
      return typeof data === 'string' && data !== '' ? payload?.[data] : payload;
    }
    return type === RpcParamtype.CONTEXT ? args[1] : null;
  },
};

/** What resolves one kind of enhancer of a handler: its global, class and method ones. */
interface EnhancerResolver {
  create(instance: object, callback: Function, module: string): unknown;
  createContext(instance: object, callback: Function, metadataKey: string): readonly unknown[];
}

/** The error path of Nest's pipeline: a handler's exception filters, then Nest's log and a rethrow. */
interface ExceptionsHandler {
  next(error: unknown, host: ExecutionContextHost): unknown;
}

/**
 * The resolvers of the `ExternalContextCreator` Nest injects, which it
 * builds for the application's container and global enhancers. Nest offers
 * no public way to ask whether a handler has enhancers, so they are read
 * from it; should a later Nest lack them, every handler takes the full
 * pipeline, which is correct, only slower.
 */
interface EnhancerResolvers {
  readonly guardsContextCreator: Pick<EnhancerResolver, 'create'>;
  readonly interceptorsContextCreator: Pick<EnhancerResolver, 'create'>;
  readonly pipesContextCreator: Pick<EnhancerResolver, 'create'>;
  readonly filtersContextCreator: EnhancerResolver;
}

/**
 * Builds, once per handler, how a worker calls it. A handler bound to no
 * guard, interceptor, pipe or exception filter (global, class, method or
 * parameter), whose parameters are `@Payload()` and `@Ctx()` only, is called
 * straight with its arguments: Nest's pipeline would add nothing but promise
 * steps. Its errors still pass Nest's exceptions handler, which logs them as
 * for any handler, and reach the run as thrown. Any other handler runs through
 * the pipeline Nest's `ExternalContextCreator` builds (context type `'rpc'`),
 * with the guards, interceptors, pipes and filters it resolves.
 * @param moduleKey the key of the controller's module, where its enhancers are resolved
 */
export function handlerCall(
  contextCreator: ExternalContextCreator,
  instance: object,
  type: Type,
  methodName: string,
  moduleKey: string,
): HandlerCall {
  const callback = (instance as Record<string, (...args: unknown[]) => unknown>)[methodName]!;
  const params = (Reflect.getOwnMetadata(PARAM_ARGS_METADATA, type, methodName) ?? DEFAULT_ARGS) as Record<
    string,
    ParamEntry
  >;
  const exceptions = plainExceptionsHandler(contextCreator, instance, callback, moduleKey);
  const direct = exceptions && directCall(instance, callback, params);
  if (direct) {
    return { handler: throughExceptionsHandler(direct, exceptions), contextIndex: direct.contextIndex };
  }
  return { handler: pipeline(contextCreator, instance, type, callback, methodName, moduleKey), contextIndex: 1 };
}

/** Whether a resolver found no enhancer. */
function none(found: unknown): boolean {
  return Array.isArray(found) && found.length === 0;
}

/**
 * Nest's exceptions handler of a handler that no enhancer is bound to, or
 * undefined when some is (or when the resolvers cannot be read).
 */
function plainExceptionsHandler(
  contextCreator: ExternalContextCreator,
  instance: object,
  callback: Function,
  moduleKey: string,
): ExceptionsHandler | undefined {
  const resolvers = contextCreator as unknown as Partial<EnhancerResolvers>;
  const { guardsContextCreator, interceptorsContextCreator, pipesContextCreator, filtersContextCreator } = resolvers;
  if (!guardsContextCreator || !interceptorsContextCreator || !pipesContextCreator || !filtersContextCreator) {
    return undefined;
  }
  if (!none(guardsContextCreator.create(instance, callback, moduleKey))) return undefined;
  if (!none(interceptorsContextCreator.create(instance, callback, moduleKey))) return undefined;
  if (!none(pipesContextCreator.create(instance, callback, moduleKey))) return undefined;
  // create() sets the module the filters are resolved in, which createContext() reads.
  const handler = filtersContextCreator.create(instance, callback, moduleKey) as ExceptionsHandler;
  if (!none(filtersContextCreator.createContext(instance, callback, EXCEPTION_FILTERS_METADATA))) return undefined;
  return typeof handler?.next === 'function' ? handler : undefined;
}

/**
 * The handler called straight with its parameters, when each is the
 * payload (or one of its fields) or the context, with no pipe of its own;
 * undefined otherwise (a custom parameter decorator, a parameter pipe).
 */
function directCall(
  instance: object,
  callback: (...args: unknown[]) => unknown,
  params: Record<string, ParamEntry>,
): HandlerCall | undefined {
  const slots: { index: number; type: number; data: unknown }[] = [];
  for (const [key, entry] of Object.entries(params)) {
    const type = Number(key.split(':')[0]);
    if (type !== RpcParamtype.PAYLOAD && type !== RpcParamtype.CONTEXT) return undefined;
    if (entry.pipes && entry.pipes.length > 0) return undefined;
    slots.push({ index: entry.index, type, data: entry.data });
  }
  slots.sort((a, b) => a.index - b.index);
  const contextIndex = slots.some((slot) => slot.type === RpcParamtype.CONTEXT) ? 1 : -1;
  const whole = (slot: (typeof slots)[number] | undefined, index: number, wanted: number) =>
    slot !== undefined && slot.index === index && slot.type === wanted && (slot.data === undefined || slot.data === '');
  // (payload) and (payload, context): the method itself, bound.
  if (
    whole(slots[0], 0, RpcParamtype.PAYLOAD) &&
    (slots.length === 1 || (slots.length === 2 && whole(slots[1], 1, RpcParamtype.CONTEXT)))
  ) {
    return { handler: callback.bind(instance), contextIndex };
  }
  const length = slots.length === 0 ? 0 : slots[slots.length - 1]!.index + 1;
  return {
    handler: (payload: unknown, context: unknown) => {
      const args = Array.from<unknown>({ length });
      const from = [payload, context];
      for (const slot of slots) args[slot.index] = PARAMS_FACTORY.exchangeKeyForValue(slot.type, slot.data, from);
      return callback.apply(instance, args);
    },
    contextIndex,
  };
}

/**
 * `call` with its errors passed to Nest's exceptions handler, as its
 * pipeline would: thrown, rejected or emitted by a returned Observable.
 * With no filter bound, the handler logs the error and throws it again, so
 * the run records it as the handler threw it.
 */
function throughExceptionsHandler(
  { handler: call, contextIndex }: HandlerCall,
  exceptions: ExceptionsHandler,
): HandlerCall['handler'] {
  const caught = (error: unknown, payload: unknown, context: unknown) => {
    const host = new ExecutionContextHost(contextIndex === 1 ? [payload, context] : [payload]);
    host.setType('rpc');
    return exceptions.next(error, host);
  };
  const settle = (returned: unknown, payload: unknown, context: unknown): unknown => {
    if (isObservable(returned)) {
      return (returned as Observable<unknown>).pipe(
        catchError((error: unknown) => caught(error, payload, context) as never),
      );
    }
    if (isThenable(returned)) return returned.then(undefined, (error: unknown) => caught(error, payload, context));
    return returned;
  };
  // A handler of the payload alone is called with it alone, as Nest's transports call it.
  if (contextIndex === -1) {
    return (payload: unknown) => {
      let returned: unknown;
      try {
        returned = call(payload);
      } catch (error) {
        return caught(error, payload, undefined);
      }
      return settle(returned, payload, undefined);
    };
  }
  return (payload: unknown, context: unknown) => {
    let returned: unknown;
    try {
      returned = call(payload, context);
    } catch (error) {
      return caught(error, payload, context);
    }
    return settle(returned, payload, context);
  };
}

/**
 * The handler wrapped in Nest's pipeline, called with (payload, context).
 * `ExternalContextCreator` finds the module of a provider host, whose
 * enhancers it resolves there, but not a controller's: it asks
 * `getContextModuleKey` instead, which a creator of this controller
 * (delegating all else to Nest's) answers with the controller's module.
 * Unlike Nest's own RPC proxy, that pipeline hands an error no filter
 * handles back as it was thrown, so the run records it, and its retry
 * policy sees it, as the handler threw it.
 */
function pipeline(
  contextCreator: ExternalContextCreator,
  instance: object,
  type: Type,
  callback: (...args: unknown[]) => unknown,
  methodName: string,
  moduleKey: string,
): (...args: unknown[]) => unknown {
  let metadataKey = PARAM_ARGS_METADATA;
  if (!Reflect.hasOwnMetadata(PARAM_ARGS_METADATA, type, methodName)) {
    Reflect.defineMetadata(DEFAULT_ARGS_METADATA, DEFAULT_ARGS, type, methodName);
    metadataKey = DEFAULT_ARGS_METADATA;
  }
  const creator: ExternalContextCreator = Object.create(contextCreator);
  creator.getContextModuleKey = () => moduleKey;
  return creator.create(
    instance,
    callback,
    methodName,
    metadataKey,
    PARAMS_FACTORY,
    undefined,
    undefined,
    { guards: true, interceptors: true, filters: true },
    'rpc',
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
