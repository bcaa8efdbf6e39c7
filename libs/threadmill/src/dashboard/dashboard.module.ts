import { Module, type DynamicModule, type MiddlewareConsumer, type NestModule, type Provider } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { routedAsyncOptions } from '../module/routed-async-options.js';
import {
  DASHBOARD_OPTIONS,
  validateDashboardOptions,
  type ThreadmillDashboardAsyncOptions,
  type ThreadmillDashboardOptions,
} from './dashboard-options.js';
import { DashboardController } from './dashboard.controller.js';
import { DashboardAccessGuard } from './dashboard-access.guard.js';
import { DashboardRequestMiddleware } from './dashboard-request.middleware.js';

/**
 * The Threadmill web dashboard for a Nest HTTP application: one
 * self-contained page (no CDN, no build step) showing every queue with its
 * segments, rates and charts, runs with their errors and quarantine records,
 * live workers with their leases, and the actions requeue, dequeue and
 * purge; behind it a JSON API under `path/api`. It reads through
 * `TaskInspector` of its `backend` (the default one unless named), so the
 * app must import that backend's `ThreadmillModule` (global by default; with
 * `isGlobal: false`, import both in the same module).
 *
 * Mount it only where operators can reach it, or give it a `guard`. Without
 * a guard it answers only requests for IP addresses, `localhost` and the
 * names in `allowedHosts`.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     ThreadmillModule.forRoot({ connection: process.env.REDIS_URL }),
 *     ThreadmillDashboardModule.forRoot({
 *       path: '/admin/queues',
 *       guard: (request: Request) => request.headers['x-admin-token'] === process.env.ADMIN_TOKEN,
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class ThreadmillDashboardModule implements NestModule {
  /** Headers and the body limit for every route of the dashboard, refusals included. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(DashboardRequestMiddleware).forRoutes(DashboardController);
  }

  /**
   * Mounts the dashboard at `path` (default `/threadmill`).
   * @throws ThreadmillConfigError for invalid options, naming each bad field
   */
  static forRoot(options: ThreadmillDashboardOptions = {}): DynamicModule {
    const resolved = validateDashboardOptions(options);
    return this.assemble(resolved.path, { provide: DASHBOARD_OPTIONS, useValue: resolved });
  }

  /**
   * Mounts the dashboard at `path`, with `readOnly`, `guard` and `title` from
   * a factory (configuration read through `ConfigService`, say).
   * @throws ThreadmillConfigError for an invalid `path` at once; for the
   *   factory's options when the application boots
   */
  static forRootAsync(options: ThreadmillDashboardAsyncOptions): DynamicModule {
    const where = 'ThreadmillDashboardModule.forRootAsync()';
    const validate = (raw: ThreadmillDashboardOptions) => validateDashboardOptions(raw, where);
    const { path, provider } = routedAsyncOptions(options, DASHBOARD_OPTIONS, validate, where);
    return this.assemble(path, provider, options.imports);
  }

  private static assemble(
    path: string,
    optionsProvider: Provider,
    imports: NonNullable<DynamicModule['imports']> = [],
  ): DynamicModule {
    return {
      module: ThreadmillDashboardModule,
      imports: [...imports, RouterModule.register([{ path, module: ThreadmillDashboardModule }])],
      controllers: [DashboardController],
      providers: [optionsProvider, DashboardAccessGuard],
    };
  }
}
