import {
  ForbiddenException,
  Inject,
  Injectable,
  MisdirectedException,
  type CanActivate,
  type ExecutionContext,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { hostName, isAllowedHost } from './dashboard-hosts.js';
import { DASHBOARD_OPTIONS, type DashboardGuardFunction, type ResolvedDashboardOptions } from './dashboard-options.js';

/** A class whose instances can activate (a Nest guard), as opposed to a guard function. */
function isGuardClass(guard: unknown): guard is Type<CanActivate> {
  return typeof guard === 'function' && typeof guard.prototype?.canActivate === 'function';
}

/**
 * Protects every route of the dashboard, page and API: first by the
 * `allowedHosts` option (421 for another host), then by the `guard` option:
 * a function of the request, or a Nest guard (class or instance). The request
 * passes only when it answers exactly `true`; without the option every
 * request of an allowed host passes.
 */
@Injectable()
export class DashboardAccessGuard implements CanActivate, OnModuleInit {
  private guard: CanActivate | DashboardGuardFunction | undefined;

  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Resolves the guard at boot, so a guard that cannot be created fails the boot, not every request. */
  async onModuleInit(): Promise<void> {
    this.guard = await this.resolve();
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    this.checkHost(request.headers['host']);
    const { guard } = this;
    if (!guard) return true;
    const answer = typeof guard === 'function' ? guard(request) : guard.canActivate(context);
    // Strictly true: a guard that forgets to return (undefined) must deny, not allow.
    if ((await (isObservable(answer) ? lastValueFrom(answer) : answer)) === true) return true;
    throw new ForbiddenException(
      'The Threadmill dashboard refused this request: its guard (ThreadmillDashboardModule.forRoot({ guard })) ' +
        'did not return true for it.',
    );
  }

  /** Refuses (421) a host the dashboard was not configured for, before the guard sees the request. */
  private checkHost(host: string | undefined): void {
    const { allowedHosts } = this.options;
    if (allowedHosts === 'any' || isAllowedHost(host, allowedHosts)) return;
    const name = hostName(host!).slice(0, 100);
    throw new MisdirectedException(
      `The Threadmill dashboard does not answer for host "${name}": ` +
        (allowedHosts.length === 0
          ? 'without a guard it answers only IP addresses and localhost, '
          : `it answers IP addresses, localhost and ${allowedHosts.join(', ')}, `) +
        'so that a page on another domain cannot reach it through DNS. To open it by this name, add ' +
        `"${name}" to ThreadmillDashboardModule.forRoot({ allowedHosts }), and give it a guard if anyone else can reach it.`,
    );
  }

  /**
   * A guard class is the application's provider when one is registered
   * anywhere (its `AuthGuard`, say), else created once with dependency
   * injection from the global providers and the modules given to
   * `forRootAsync({ imports })`.
   */
  private async resolve(): Promise<CanActivate | DashboardGuardFunction | undefined> {
    const { guard } = this.options;
    if (!isGuardClass(guard)) return guard;
    try {
      return this.moduleRef.get(guard, { strict: false });
    } catch {
      // Not a provider of the application: create it below.
    }
    try {
      return await this.moduleRef.create(guard);
    } catch (error) {
      throw new ThreadmillConfigError(
        [
          `guard: cannot create ${guard.name} (${(error as Error).message.split('\n')[0]}); register it as a ` +
            'provider of your application, make its dependencies global, or import their modules with ' +
            'ThreadmillDashboardModule.forRootAsync({ imports, useFactory: () => ({ guard }) })',
        ],
        'ThreadmillDashboardModule',
      );
    }
  }
}
