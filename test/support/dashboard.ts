import type { INestApplication, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillDashboardModule, type ThreadmillDashboardOptions } from '@threadmill/nestjs/dashboard';
import { request as httpRequest } from 'node:http';
import { FIXTURE_QUEUES, FailService, FixtureTasksModule, MathService } from '../fixtures/fixture-tasks.js';
import { redisUrl } from './backend.js';
import { Harness } from './harness.js';

// What the dashboard's tests share: HTTP calls as the page makes them, and
// the apps, harnesses and runs a test starts.

export interface Dashboard {
  app: INestApplication;
  /** The dashboard's URL (the page; the API is below it). */
  url: string;
}

export interface Answer<T = any> {
  status: number;
  type: string | null;
  body: T;
  /** The answer's headers, names in lower case. */
  headers: Record<string, string>;
}

export async function call<T = any>(url: string, init: RequestInit & { json?: unknown } = {}): Promise<Answer<T>> {
  const { json, ...rest } = init;
  const response = await fetch(url, {
    ...rest,
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    headers: { ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...rest.headers },
  });
  const text = await response.text();
  const type = response.headers.get('content-type');
  const headers = Object.fromEntries(response.headers);
  return { status: response.status, type, body: type?.includes('json') ? JSON.parse(text) : text, headers };
}

/**
 * A request whose Host header names `host`, as a browser sends it for a page
 * on that name (fetch always sends the URL's own host); a JSON POST with
 * `json`, sent with its Content-Length unless `chunked`.
 */
export function callAs<T = any>(
  host: string,
  url: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string>; chunked?: boolean } = {},
): Promise<Answer<T>> {
  const body = init.json === undefined ? undefined : JSON.stringify(init.json);
  const length = body === undefined || init.chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  const headers = {
    ...(body === undefined ? {} : { 'content-type': 'application/json', ...length }),
    ...init.headers,
    host,
  };
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const type = response.headers['content-type'] ?? null;
        const answerHeaders = Object.fromEntries(
          Object.entries(response.headers).map(([name, value]) => [name, String(value)]),
        );
        resolve({
          status: response.statusCode!,
          type,
          body: type?.includes('json') ? JSON.parse(text) : text,
          headers: answerHeaders,
        });
      });
    });
    request.on('error', reject);
    // Written before the end, a body goes out in chunks; given to end() alone, with its length.
    if (init.chunked && body !== undefined) request.write(body);
    request.end(init.chunked ? undefined : body);
  });
}

/** An action as the dashboard page sends it: a JSON POST (`{}` without a body of its own). */
export const post = <T = any>(url: string, json: unknown = {}, headers?: Record<string, string>) =>
  call<T>(url, { method: 'POST', json, headers });

/** The apps, harnesses and servers one test starts, closed together by `closeAll`. */
export class DashboardTestbed {
  readonly closers: (() => Promise<void>)[] = [];

  async closeAll(): Promise<void> {
    await Promise.all(this.closers.splice(0).map((close) => close()));
  }

  /**
   * A Nest HTTP app with Threadmill on `alias`, the fixture tasks and the
   * dashboard, listening on a free port; it logs errors only, to `logger` if given.
   */
  async startDashboard(
    alias: string,
    options: ThreadmillDashboardOptions = {},
    globalPrefix?: string,
    logger?: LoggerService,
  ): Promise<Dashboard> {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, alias }),
        FixtureTasksModule,
        ThreadmillDashboardModule.forRoot(options),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: logger ?? ['error'] });
    if (globalPrefix) app.setGlobalPrefix(globalPrefix);
    await app.listen(0, '127.0.0.1');
    this.closers.push(() => app.close());
    const prefix = globalPrefix ? `/${globalPrefix}` : '';
    return { app, url: `${await app.getUrl()}${prefix}${options.path ?? '/threadmill'}` };
  }

  async startHarness(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const harness = await Harness.start(...args);
    this.closers.push(() => harness.close());
    return harness;
  }

  /**
   * On a fresh alias: 3 successful and 2 failed runs of `default` (run by a real
   * worker, which then stops), then 2 ready runs and 1 deferred one.
   */
  async seed(alias: string) {
    const worker = await this.startHarness({ options: { alias }, worker: { concurrency: 1 } });
    const succeeded = await Promise.all([1, 2, 3].map((n) => worker.queue.enqueue(MathService, 'add', [n, n])));
    const failed = await Promise.all(
      ['card declined', 'mailbox full'].map((m) => worker.queue.enqueue(FailService, 'alwaysFail', [m])),
    );
    await Promise.all([...succeeded, ...failed].map((run) => worker.waitFor(run.id)));
    await worker.close();
    this.closers.pop();
    const producer = await this.startHarness({ options: { alias } });
    const ready = await Promise.all([7, 8].map((n) => producer.queue.enqueue(MathService, 'add', [n, 1])));
    const deferred = await producer.queue.enqueue(MathService, 'add', [9, 1], { delayMs: 600_000 });
    return { succeeded, failed, ready, deferred };
  }
}
