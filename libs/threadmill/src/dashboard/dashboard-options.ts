import type { CanActivate, Type } from '@nestjs/common';
import { IsBoolean, IsOptional, IsString, Matches, MaxLength, MinLength, ValidateBy } from 'class-validator';
import type { RoutedAsyncOptions } from '../module/routed-async-options.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import { validateSchema } from '../options/validate-schema.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { HOST_PATTERN, type AllowedHosts } from './dashboard-hosts.js';

/**
 * Decides whether a request may see the dashboard (page and API). It gets the
 * HTTP adapter's native request (Express `Request`, Fastify `FastifyRequest`)
 * and must return (or resolve to) exactly `true` to let it through; anything
 * else answers 403. Throw an `HttpException` to answer differently (e.g. 401).
 */
export type DashboardGuardFunction = (request: any) => boolean | Promise<boolean>;

/**
 * What protects the dashboard: a function of the request, or a Nest guard
 * (a `CanActivate` class, created with dependency injection, or an instance),
 * such as the application's own `AuthGuard`.
 */
export type DashboardGuard = DashboardGuardFunction | Type<CanActivate> | CanActivate;

/** Options of {@link ThreadmillDashboardModule.forRoot}. */
export interface ThreadmillDashboardOptions {
  /**
   * The backend the dashboard shows and acts on: the `name` of one of the
   * application's `ThreadmillModule`s.
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Where the dashboard is mounted (below the app's global prefix, if any):
   * the page at `path`, the JSON API at `path/api/...`.
   * @defaultValue `'/threadmill'`
   */
  path?: string;
  /**
   * Hide requeue, requeue all, dequeue, cancel and purge on the page and answer 403 to them in the API.
   * @defaultValue `false`
   */
  readOnly?: boolean;
  /** Protects the page and the API; without it the dashboard is open to whoever reaches the app. */
  guard?: DashboardGuard;
  /**
   * The host names the dashboard answers to, as the browser's address bar
   * shows them (without the port): `'queues.example.com'`, or
   * `'*.example.com'` for its subdomains; `'any'` answers every host. IP
   * addresses and `localhost` always pass. A request for another host answers
   * 421, so a page on another domain whose name an attacker points at this
   * server (DNS rebinding) cannot read the dashboard or act on it.
   * @defaultValue `[]` (IP addresses and `localhost` only) without a `guard`; `'any'` with one
   */
  allowedHosts?: readonly string[] | 'any';
  /**
   * Shown in the page's header and title.
   * @defaultValue `'Threadmill'`
   */
  title?: string;
}

/**
 * Options of {@link ThreadmillDashboardModule.forRootAsync}: `path` (default
 * `'/threadmill'`) beside the factory, the others from it.
 */
export type ThreadmillDashboardAsyncOptions = RoutedAsyncOptions<ThreadmillDashboardOptions>;

/** The validated options with their defaults, as the dashboard's providers see them. */
export interface ResolvedDashboardOptions {
  readonly backend: string;
  readonly path: string;
  readonly readOnly: boolean;
  readonly guard: DashboardGuard | undefined;
  readonly allowedHosts: AllowedHosts;
  readonly title: string;
}

/** Injection token of the {@link ResolvedDashboardOptions}. */
export const DASHBOARD_OPTIONS = Symbol('THREADMILL_DASHBOARD_OPTIONS');

/** `/` or `/`-separated segments; no parameters or wildcards, which would swallow the API's routes. */
const PATH_PATTERN = /^\/$|^(\/[A-Za-z0-9._~-]+)+$/;

function IsDashboardGuard(): PropertyDecorator {
  return ValidateBy({
    name: 'isDashboardGuard',
    validator: {
      validate: (value: unknown) =>
        typeof value === 'function' || typeof (value as CanActivate | null)?.canActivate === 'function',
      defaultMessage: () =>
        'guard must be a function (request) => boolean | Promise<boolean>, a CanActivate class or a CanActivate instance',
    },
  });
}

function IsAllowedHosts(): PropertyDecorator {
  return ValidateBy({
    name: 'isAllowedHosts',
    validator: {
      validate: (value: unknown) =>
        value === 'any' ||
        (Array.isArray(value) &&
          value.every((host) => typeof host === 'string' && host.length <= 253 && HOST_PATTERN.test(host))),
      defaultMessage: () =>
        "allowedHosts must be 'any' or an array of host names without a port " +
        '(e.g. ["queues.example.com", "*.internal.example.com"])',
    },
  });
}

/** The validation rules of {@link ThreadmillDashboardOptions}, with the defaults as initial values. */
class DashboardOptionsSchema {
  @Matches(NAME_PATTERN, {
    message: 'backend must be the name of a ThreadmillModule (1-64 letters, digits, "_", "." or "-")',
  })
  backend = DEFAULT_BACKEND;

  @IsString()
  @Matches(PATH_PATTERN, {
    message:
      'path must be made of "/"-separated segments of letters, digits, ".", "_", "~" or "-" ' +
      '(e.g. "/threadmill" or "/admin/queues"), without route parameters or wildcards',
  })
  path = '/threadmill';

  @IsBoolean()
  readOnly = false;

  @IsOptional()
  @IsDashboardGuard()
  guard?: DashboardGuard;

  @IsOptional()
  @IsAllowedHosts()
  allowedHosts?: AllowedHosts;

  @IsString()
  @MinLength(1)
  @MaxLength(100)
  title = 'Threadmill';
}

/**
 * Applies the defaults to the dashboard's options and validates them
 * (class-validator, unknown options refused). `path` may omit its leading
 * `/`; a trailing `/` is dropped.
 * @throws ThreadmillConfigError listing every bad field
 */
export function validateDashboardOptions(
  raw: ThreadmillDashboardOptions | undefined,
  where = 'ThreadmillDashboardModule.forRoot()',
): ResolvedDashboardOptions {
  const path = raw?.path;
  const normalised = typeof path === 'string' && path.length > 0 ? `/${path.replace(/^\/+|\/+$/g, '')}` : path;
  const given = raw && typeof raw === 'object' && 'path' in raw ? { ...raw, path: normalised } : raw;
  const schema = validateSchema(new DashboardOptionsSchema(), given, where);
  // A guard stops a rebinding page as it stops any stranger: the page lacks the operator's credentials.
  const allowedHosts = schema.allowedHosts ?? (schema.guard ? 'any' : []);
  return {
    backend: schema.backend,
    path: schema.path,
    readOnly: schema.readOnly,
    guard: schema.guard,
    allowedHosts,
    title: schema.title,
  };
}
