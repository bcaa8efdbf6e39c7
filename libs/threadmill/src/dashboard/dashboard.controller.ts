import {
  BadRequestException,
  Body,
  ConflictException,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Query,
  ServiceUnavailableException,
  UnsupportedMediaTypeException,
  UseGuards,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isConnectionFailure } from '../backend/redis/redis-connections.js';
import type { Segment } from '../backend/task-backend.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';
import { InvalidRunStateError } from '../errors/invalid-run-state.error.js';
import { RedisUnavailableError } from '../errors/redis-unavailable.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import { SEGMENTS, type TaskInspector } from '../inspector/task-inspector.js';
import { inspectorOf } from '../module/backend-lookup.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import type { TaskResult } from '../records/task-result.js';
import type { CancelOutcome } from '../queue/cancel-run.js';
import type {
  DashboardDequeued,
  DashboardFlow,
  DashboardMetrics,
  DashboardOverview,
  DashboardPauseState,
  DashboardPurged,
  DashboardRequeuedAll,
  DashboardRunPage,
  DashboardWorkers,
  DashboardSchedules,
} from './dashboard-api.types.js';
import { DASHBOARD_OPTIONS, type ResolvedDashboardOptions } from './dashboard-options.js';
import { DASHBOARD_CSP, renderDashboardPage } from './dashboard.page.js';
import { DashboardAccessGuard } from './dashboard-access.guard.js';

/** The request headers the actions read (Node lower-cases their names). */
type RequestHeaders = Readonly<Record<string, string | undefined>>;

/**
 * Turns Threadmill's errors into HTTP answers with their messages: an unknown
 * run is 404, bad input 400, a run in the wrong state for the action 409,
 * Redis out of reach 503.
 */
function toHttpError(error: unknown): unknown {
  if (error instanceof TaskResultNotFoundError) return new NotFoundException(error.message);
  if (error instanceof InvalidInspectionError) return new BadRequestException(error.message);
  if (error instanceof InvalidRunStateError) return new ConflictException(error.message);
  if (error instanceof RedisUnavailableError) return new ServiceUnavailableException(error.message);
  if (isConnectionFailure(error)) {
    return new ServiceUnavailableException(`Redis did not answer the dashboard: ${(error as Error).message}`);
  }
  return error;
}

async function mapped<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw toHttpError(error);
  }
}

/**
 * The capacity of a Redis whose memory cannot be read: a managed service may
 * refuse `INFO`, and the overview must not fail for it. A Redis out of reach
 * fails the overview's own reads.
 */
function unreadable(): null {
  return null;
}

/** A value a request sent, for an error message: a string quoted and cut short, anything else by its type. */
function described(value: unknown): string {
  if (typeof value === 'string') {
    return value.length <= 80
      ? JSON.stringify(value)
      : `${JSON.stringify(value.slice(0, 80))}… (${value.length} characters)`;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Parses an optional integer query parameter, refusing anything but digits within `[min, max]`. */
function integer(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(parsed >= min && parsed <= max)) {
    throw new BadRequestException(`${name} must be an integer from ${min} to ${max}, got ${described(value)}.`);
  }
  return parsed;
}

/**
 * The run or flow id a request names, in its path (`api/runs/:id`) or its
 * query (`api/runs?id=`): the query carries any id, where the path cannot
 * carry `.` or `..` (browsers and URL parsers resolve them as path segments).
 */
function idOf(kind: 'run' | 'flow', inPath: string | undefined, inQuery: unknown): string {
  const id = inPath ?? inQuery;
  if (typeof id !== 'string') {
    throw new BadRequestException(
      id === undefined
        ? `Name the ${kind}: api/${kind}s/<id> or api/${kind}s?id=<id>.`
        : `Name one ${kind}: give id once.`,
    );
  }
  if (id.length === 0 || id.length > 200) {
    throw new BadRequestException(`"${id.slice(0, 40)}" is not a ${kind} id (1-200 characters).`);
  }
  return id;
}

const runId = (inPath: string | undefined, inQuery: unknown) => idOf('run', inPath, inQuery);

/**
 * The dashboard's page and JSON API, mounted under the module's `path` by
 * `RouterModule`. Every route is behind `DashboardRequestMiddleware`
 * (headers, body size) and {@link DashboardAccessGuard} (host, guard).
 */
@Controller()
@UseGuards(DashboardAccessGuard)
export class DashboardController implements OnModuleInit {
  private readonly html: string;
  private inspector!: TaskInspector;

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
  ) {
    this.html = renderDashboardPage({ title: options.title, readOnly: options.readOnly });
  }

  /**
   * Finds the inspector of the dashboard's backend once every provider
   * exists (a backend's module may be instantiated after this one); an
   * undeclared backend fails the boot.
   */
  onModuleInit(): void {
    this.inspector = inspectorOf(this.moduleRef, this.options.backend, 'ThreadmillDashboardModule');
  }

  /** The single-page dashboard; it finds its API relative to its own URL, so a global prefix is fine. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Content-Security-Policy', DASHBOARD_CSP)
  page(): string {
    return this.html;
  }

  @Get('api/overview')
  async overview(@Query('window') window?: string): Promise<DashboardOverview> {
    const windowMinutes = integer('window', window, 5, 1, 60);
    const [queues, capacity] = await mapped(
      Promise.all([this.inspector.overview(windowMinutes), this.inspector.capacity().catch(unreadable)]),
    );
    return {
      alias: this.inspector.alias,
      title: this.options.title,
      readOnly: this.options.readOnly,
      windowMinutes,
      now: this.inspector.now(),
      queues,
      capacity,
    };
  }

  @Get('api/queues/:queue/metrics')
  async metrics(@Param('queue') queue: string, @Query('minutes') minutes?: string): Promise<DashboardMetrics> {
    const count = integer('minutes', minutes, 60, 1, 120);
    await this.known(queue);
    return { queue, now: this.inspector.now(), minutes: await mapped(this.inspector.metrics(queue, count)) };
  }

  @Get('api/queues/:queue/runs')
  async runs(
    @Param('queue') queue: string,
    @Query('segment') segment = 'ready',
    @Query('offset') offset?: string,
    @Query('limit') limit?: string,
  ): Promise<DashboardRunPage> {
    if (!SEGMENTS.includes(segment as Segment)) {
      throw new BadRequestException(`segment must be one of ${SEGMENTS.join(', ')}, got ${described(segment)}.`);
    }
    const page = { offset: integer('offset', offset, 0, 0, 10_000_000), limit: integer('limit', limit, 25, 1, 500) };
    await this.known(queue);
    const [runs, [counts]] = await mapped(
      Promise.all([this.inspector.list(queue, segment as Segment, page), this.inspector.counts([queue])]),
    );
    const total = counts?.[segment as Segment] ?? runs.length;
    return { queue, segment: segment as Segment, ...page, total, now: this.inspector.now(), runs };
  }

  /** A run's record: `api/runs/<id>`, or `api/runs?id=<id>` for any id (the page's form). */
  @Get(['api/runs/:id', 'api/runs'])
  run(@Param('id') inPath: string | undefined, @Query('id') inQuery: unknown): Promise<TaskResult> {
    return mapped(this.inspector.get(runId(inPath, inQuery)));
  }

  /**
   * A flow with its nodes' live statuses, each node after its dependencies:
   * `api/flows/<id>`, or `api/flows?id=<id>` for any id (the page's form).
   */
  @Get(['api/flows/:id', 'api/flows'])
  async flow(@Param('id') inPath: string | undefined, @Query('id') inQuery: unknown): Promise<DashboardFlow> {
    const id = idOf('flow', inPath, inQuery);
    const flow = await mapped(this.inspector.flow(id));
    if (!flow) {
      throw new NotFoundException(
        `No flow "${id}" on backend "${this.inspector.alias}": it never existed, or it ended and its record ` +
          'expired (a flow is kept as long as the results of its runs).',
      );
    }
    return flow;
  }

  @Get('api/workers')
  async workers(): Promise<DashboardWorkers> {
    return { now: this.inspector.now(), workers: await mapped(this.inspector.workers()) };
  }

  @Get('api/schedules')
  async schedules(): Promise<DashboardSchedules> {
    return { now: this.inspector.now(), schedules: await mapped(this.inspector.schedules()) };
  }

  /** Cancels a pending or running run (it ends CANCELLED); 409 for a run that finished otherwise. */
  @Post(['api/runs/:id/cancel', 'api/runs/cancel'])
  @HttpCode(200)
  cancel(
    @Param('id') inPath: string | undefined,
    @Query('id') inQuery: unknown,
    @Headers() headers: RequestHeaders,
  ): Promise<CancelOutcome> {
    this.mayAct(headers);
    return mapped(this.inspector.cancel(runId(inPath, inQuery)));
  }

  /** Sends a FAILED, QUARANTINED or CANCELLED run back to READY; 409 for a run in any other state. */
  @Post(['api/runs/:id/requeue', 'api/runs/requeue'])
  @HttpCode(200)
  requeue(
    @Param('id') inPath: string | undefined,
    @Query('id') inQuery: unknown,
    @Headers() headers: RequestHeaders,
  ): Promise<TaskResult> {
    this.mayAct(headers);
    return mapped(this.inspector.requeue(runId(inPath, inQuery)));
  }

  /** Removes a pending (READY or deferred) run; 409 for a run in any other state. */
  @Post(['api/runs/:id/dequeue', 'api/runs/dequeue'])
  @HttpCode(200)
  async dequeue(
    @Param('id') inPath: string | undefined,
    @Query('id') inQuery: unknown,
    @Headers() headers: RequestHeaders,
  ): Promise<DashboardDequeued> {
    this.mayAct(headers);
    const id = runId(inPath, inQuery);
    await mapped(this.inspector.dequeue(id));
    return { id, dequeued: true };
  }

  /** Removes every run of a queue; the body must repeat the queue's name: `{ "confirm": "<queue>" }`. */
  @Post('api/queues/:queue/purge')
  @HttpCode(200)
  async purge(
    @Param('queue') queue: string,
    @Body() body: unknown,
    @Headers() headers: RequestHeaders,
  ): Promise<DashboardPurged> {
    this.mayAct(headers);
    this.queueName(queue);
    const confirm = typeof body === 'object' && body !== null ? (body as { confirm?: unknown }).confirm : undefined;
    if (confirm !== queue) {
      throw new BadRequestException(
        `Purging removes every run of queue "${queue}" with its record. To confirm, send the body ` +
          `{ "confirm": ${JSON.stringify(queue)} } (got ${confirm === undefined ? 'no confirm' : described(confirm)}).`,
      );
    }
    await this.known(queue);
    return { queue, removed: await mapped(this.inspector.purge(queue)) };
  }

  /**
   * Requeues every run a queue's failed, quarantined or cancelled segment holds
   * (in chunks: its count falls meanwhile): `{ "segment": "failed" }`.
   */
  @Post('api/queues/:queue/requeue-all')
  @HttpCode(200)
  async requeueAll(
    @Param('queue') queue: string,
    @Body() body: unknown,
    @Headers() headers: RequestHeaders,
  ): Promise<DashboardRequeuedAll> {
    this.mayAct(headers);
    await this.known(queue);
    const segment = typeof body === 'object' && body !== null ? (body as { segment?: unknown }).segment : undefined;
    if (segment !== 'failed' && segment !== 'quarantined' && segment !== 'cancelled') {
      throw new BadRequestException(
        'Requeue all takes the segment to requeue: send the body { "segment": "failed" }, "quarantined" or ' +
          `"cancelled" (got ${segment === undefined ? 'no segment' : described(segment)}).`,
      );
    }
    return { queue, segment, requeued: await mapped(this.inspector.requeueAll(queue, segment)) };
  }

  /**
   * Pauses a queue: no worker claims its runs until it is resumed (running
   * ones finish). Idempotent; an unknown queue is 404 (pause one before its
   * workers are deployed with `TaskInspector.pause` or the terminal inspector).
   */
  @Post('api/queues/:queue/pause')
  @HttpCode(200)
  async pause(@Param('queue') queue: string, @Headers() headers: RequestHeaders): Promise<DashboardPauseState> {
    this.mayAct(headers);
    await this.known(queue);
    return mapped(this.inspector.pause(queue));
  }

  /** Resumes a paused queue and wakes its idle workers. Idempotent. */
  @Post('api/queues/:queue/resume')
  @HttpCode(200)
  async resume(@Param('queue') queue: string, @Headers() headers: RequestHeaders): Promise<DashboardPauseState> {
    this.mayAct(headers);
    await this.known(queue);
    return mapped(this.inspector.resume(queue));
  }

  private mayAct(headers: RequestHeaders): void {
    if (this.options.readOnly) {
      throw new ForbiddenException(
        'The Threadmill dashboard is read-only (readOnly: true): requeue, requeue all, dequeue, cancel, purge, pause and resume are disabled.',
      );
    }
    // Browsers tell where a request comes from: refuse actions another site's page
    // (or a sibling subdomain) makes on behalf of a signed-in operator.
    const site = headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') {
      throw new ForbiddenException(
        `The Threadmill dashboard refuses actions requested by another site (Sec-Fetch-Site: ${site}).`,
      );
    }
    // Browsers without Sec-Fetch-Site: an HTML form on another site cannot send
    // JSON, and another site's script cannot without a CORS preflight.
    if (!/^application\/json\b/i.test(headers['content-type'] ?? '')) {
      throw new UnsupportedMediaTypeException(
        'Threadmill dashboard actions take a JSON request (Content-Type: application/json), ' +
          `as the dashboard page sends; got ${headers['content-type'] ? `"${headers['content-type']}"` : 'none'}.`,
      );
    }
  }

  private queueName(queue: string): void {
    if (!NAME_PATTERN.test(queue)) {
      throw new BadRequestException(
        `"${queue.slice(0, 80)}" is not a queue name (1-64 characters of letters, digits, "_", "." or "-").`,
      );
    }
  }

  private async known(queue: string): Promise<void> {
    this.queueName(queue);
    const queues = await mapped(this.inspector.queues());
    if (!queues.includes(queue)) {
      throw new NotFoundException(
        `No queue "${queue}" on backend "${this.inspector.alias}": its queues are ${queues.join(', ') || '(none)'}.`,
      );
    }
  }
}
