import {
  ForbiddenException,
  Inject,
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { DASHBOARD_OPTIONS, type DashboardGuardFunction, type ResolvedDashboardOptions } from './dashboard-options.js';

/** A class whose instances can activate (a Nest guard), as opposed to a guard function. */
function isGuardClass(guard: unknown): guard is Type<CanActivate> {
  return typeof guard === 'function' && typeof guard.prototype?.canActivate === 'function';
}

/**
 * Protects every route of the dashboard, page and API, with the `guard`
 * option: a function of the request, or a Nest guard (class or instance).
 * The request passes only when it answers exactly `true`; without the option
 * every request passes.
 */
@Injectable()
export class DashboardAccessGuard implements CanActivate {
  private guard: Promise<CanActivate | DashboardGuardFunction | undefined> | undefined;

  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const guard = await (this.guard ??= this.resolve());
    if (!guard) return true;
    const answer =
      typeof guard === 'function' ? guard(context.switchToHttp().getRequest()) : guard.canActivate(context);
    // Strictly true: a guard that forgets to return (undefined) must deny, not allow.
    if ((await (isObservable(answer) ? lastValueFrom(answer) : answer)) === true) return true;
    throw new ForbiddenException(
      'The Threadmill dashboard refused this request: its guard (ThreadmillDashboardModule.forRoot({ guard })) ' +
        'did not return true for it.',
    );
  }

  /** A guard class is created once, with dependency injection from the application's modules. */
  private async resolve(): Promise<CanActivate | DashboardGuardFunction | undefined> {
    const { guard } = this.options;
    return isGuardClass(guard) ? this.moduleRef.create(guard) : guard;
  }
}
