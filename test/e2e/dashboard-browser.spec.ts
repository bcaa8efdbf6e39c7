import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DemoTasksModule } from '@threadmill/demo-tasks';
import { Task, TaskContext, TaskInspector, TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillDashboardModule } from '@threadmill/nestjs/dashboard';
import { RedisServer } from '@threadmill/nestjs/testing';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { TaskBackend } from '../../libs/threadmill/src/backend/task-backend.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { launchChromium } from '../support/browser.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/**
 * The README's screenshot, rewritten only by `npm run docs:screenshot`, so a
 * test run leaves the checkout as it was; other runs keep theirs in a temporary file.
 */
const UPDATE_SCREENSHOT = process.env['THREADMILL_UPDATE_SCREENSHOT'] === '1';
const SCREENSHOT = UPDATE_SCREENSHOT
  ? fileURLToPath(new URL('../../docs/images/dashboard.png', import.meta.url))
  : join(tmpdir(), `threadmill-dashboard-${process.pid}.png`);
const QUEUES = ['default', 'emails', 'billing', 'reports'];

/** Long exports keep the live worker's leases visible while the page is photographed. */
@Injectable()
class ExportService {
  @Task({ queue: 'reports' })
  async exportCsv(accountId: number, ms: number, context: TaskContext): Promise<{ rows: number }> {
    await delay(ms, undefined, { signal: context.signal }).catch(() => undefined);
    return { rows: accountId * 12 };
  }
}

/** A task a newer deploy of the producer has and the running worker does not: its run is quarantined. */
@Injectable()
class RefundService {
  @Task({ queue: 'billing' })
  refund(invoiceId: number, amountCents: number): { invoiceId: number; refundedCents: number } {
    return { invoiceId, refundedCents: amountCents };
  }
}

@Module({ providers: [ExportService], exports: [ExportService] })
class ExportModule {}

@Module({ providers: [RefundService] })
class RefundModule {}

/** A small deterministic random generator (mulberry32), so the screenshot is the same every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * For the screenshot only: adds a plausible history to the per-minute metrics
 * of the 59 minutes before this one (a test cannot run for an hour). The
 * current minute, the counts and every run shown are real.
 */
async function backfillHistory(backend: RedisTaskBackend): Promise<void> {
  const next = random(42);
  const client = backend.connections.client;
  const [seconds] = await client.time();
  const current = Math.floor(Number(seconds) / 60);
  const profiles: Record<string, { rate: number; failed: number; retried: number; waitMs: number }> = {
    emails: { rate: 150, failed: 0.002, retried: 0.01, waitMs: 35 },
    billing: { rate: 95, failed: 0.05, retried: 0.3, waitMs: 60 },
    default: { rate: 60, failed: 0.003, retried: 0, waitMs: 25 },
    reports: { rate: 10, failed: 0.01, retried: 0, waitMs: 300 },
  };
  const pipeline = client.pipeline();
  for (const [queue, profile] of Object.entries(profiles)) {
    for (let ago = 59; ago >= 1; ago--) {
      const wave = 1 + 0.35 * Math.sin((ago / 60) * Math.PI * 2.2) + (next() - 0.5) * 0.3;
      const enqueued = Math.round(profile.rate * wave);
      const failed = Math.round(enqueued * profile.failed * (0.4 + next() * 1.2));
      const retried = Math.round(enqueued * profile.retried * (0.7 + next() * 0.6));
      // A backlog 30-24 minutes ago: runs waited longer, and the workers caught up after it.
      const backlog = ago <= 30 && ago >= 24 ? 6 + (30 - ago) * 3 : 1;
      const started = enqueued + retried;
      const fields = {
        enqueued,
        started,
        waitMs: Math.round(started * profile.waitMs * backlog * (0.8 + next() * 0.4)),
        succeeded: enqueued - failed,
        failed,
        retried,
        quarantined: 0,
      };
      const key = backend.keys.metrics(queue) + (current - ago);
      // Added to, never overwriting, what real runs recorded in those minutes.
      for (const [field, value] of Object.entries(fields)) pipeline.hincrby(key, field, value);
      pipeline.pexpire(key, 2 * 3_600_000);
    }
  }
  await pipeline.exec();
}

/** The trimmed text of `locator` once it matches `expected` (or whatever it shows after `timeoutMs`). */
async function shown(locator: Locator, expected: string | RegExp, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = ((await locator.textContent({ timeout: timeoutMs }).catch(() => '')) ?? '').trim();
    if ((typeof expected === 'string' ? text === expected : expected.test(text)) || Date.now() > deadline) return text;
    await delay(100);
  }
}

/** How many elements match `selector` once there are `expected` of them (or after `timeoutMs`). */
async function countOf(page: Page, selector: string, expected: number, timeoutMs = 15_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const count = await page.locator(selector).count();
    if (count === expected || Date.now() > deadline) return count;
    await delay(100);
  }
}

describe('the web dashboard in a browser', () => {
  const alias = uniqueAlias('shop');
  let browser: Browser;
  let app: INestApplication;
  let worker: Harness;
  let url: string;
  let declined: string[];

  beforeAll(async () => {
    const launched = await launchChromium();
    browser = launched.browser;
    console.log(`The dashboard's browser test drives ${launched.description}.`);
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias, queues: QUEUES }),
        DemoTasksModule,
        ExportModule,
        RefundModule,
        ThreadmillDashboardModule.forRoot(),
      ],
    }).compile();
    app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    url = `${await app.getUrl()}/threadmill`;
    // The worker runs the demo's tasks and the exports, but not RefundService (an older deploy).
    worker = await Harness.start({
      options: { alias, queues: QUEUES },
      imports: [DemoTasksModule, ExportModule],
      worker: { concurrency: 4, prefetch: 0, shutdownTimeoutMs: 500 },
    });

    const tasks = app.get(TaskQueue);
    const people = ['ada', 'grace', 'linus', 'margaret', 'ken', 'barbara', 'dennis', 'frances'];
    await tasks.enqueueMany(
      Array.from({ length: 180 }, (_, i) => ({
        task: 'EmailService.sendWelcome',
        args: [4100 + i, `${people[i % people.length]}.${4100 + i}@example.com`],
      })),
    );
    // Invoices 1007, 1027, ... are declined (FAILED); every third one is retried once.
    const charges = await tasks.enqueueMany(
      Array.from({ length: 120 }, (_, i) => ({
        task: 'BillingService.charge',
        args: [1001 + i, 1_500 + ((i * 731) % 9_000)],
      })),
    );
    declined = charges.filter((_, i) => (1001 + i) % 20 === 7).map((run) => run.id);
    await tasks.enqueueMany([
      ...Array.from({ length: 60 }, (_, i) => ({ task: 'ReportService.generate', args: [`rpt-${3000 + i}`, 200] })),
      ...Array.from({ length: 8 }, (_, i) => ({
        task: 'AlertService.page',
        args: [880 + i, i % 3 ? 'major' : 'critical'],
      })),
      ...Array.from({ length: 10 }, (_, i) => ({ task: 'ExportService.exportCsv', args: [70 + i, 20] })),
      { task: 'ReportService.generate', args: ['rpt-weekly', 5_000], delayMs: 3_600_000 },
      { task: 'ReportService.generate', args: ['rpt-monthly', 20_000], delayMs: 7_200_000 },
      // Only this app knows RefundService: the worker quarantines the run (unknown-task).
      { task: RefundService, method: 'refund' as const, args: [1042, 2_500] as [number, number] },
    ]);
    const inspector = app.get(TaskInspector);
    const counts = async () => Object.fromEntries((await inspector.counts(QUEUES)).map((c) => [c.queue, c]));
    await waitUntil('the seeded runs have settled', async () => {
      const { emails, billing, reports, ...rest } = await counts();
      return (
        emails!.successful === 180 &&
        billing!.successful + billing!.failed === 120 &&
        billing!.quarantined === 1 &&
        rest['default']!.successful === 68 &&
        reports!.successful === 10
      );
    });
    // Six long exports for four slots: four running under the worker's leases, two ready.
    await tasks.enqueueMany(
      Array.from({ length: 6 }, (_, i) => ({ task: 'ExportService.exportCsv', args: [90 + i, 120_000] })),
    );
    await waitUntil('the worker holds four leases', async () => (await counts())['reports']!.running === 4);
    await backfillHistory(app.get(TaskBackend) as RedisTaskBackend);
  });

  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await app?.close();
  });

  it('shows the queues with their counts, the live worker with its leases, and the charts', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await page.goto(`${url}#queue=billing&segment=failed`);
    const count = (queue: string, segment: string) =>
      page.locator(`#queues tr[data-queue="${queue}"] [data-count="${segment}"]`);

    expect(await shown(count('emails', 'successful'), '180')).toBe('180');
    expect(await shown(count('billing', 'successful'), '114')).toBe('114');
    expect(await shown(count('billing', 'failed'), '6')).toBe('6');
    expect(await shown(count('billing', 'quarantined'), '1')).toBe('1');
    expect(await shown(count('default', 'successful'), '68')).toBe('68');
    expect(await shown(count('default', 'deferred'), '2')).toBe('2');
    expect(await shown(count('reports', 'running'), '4')).toBe('4');
    expect(await shown(count('reports', 'ready'), '2')).toBe('2');
    const queueRows = page.locator('#queues tbody tr');
    const queues = await Promise.all(
      Array.from({ length: await queueRows.count() }, (_, i) => queueRows.nth(i).getAttribute('data-queue')),
    );
    expect(queues).toEqual(['billing', 'default', 'emails', 'reports']);
    // Every count has its column: the header names as many cells as a row holds.
    const headers = await page.locator('#queues thead th').allTextContents();
    expect(headers.slice(1, 9)).toEqual([
      'Ready',
      'Deferred',
      'Running',
      'Successful',
      'Failed',
      'Quarantined',
      'Cancelled',
      'Waiting',
    ]);
    expect(headers).toHaveLength(await page.locator('#queues tr[data-queue="billing"] td').count());
    expect(await shown(page.locator('#queues tr[data-queue="reports"] [data-oldest]'), /\d+(\.\d+)? (ms|s)$/)).toMatch(
      /\d+(\.\d+)? (ms|s)$/,
    );

    // The selected queue's failed runs, each with its error.
    expect(await countOf(page, '#runs tbody tr', 6)).toBe(6);
    const rows = await page.locator('#runs tbody tr').allTextContents();
    expect(
      rows.every((row) => /BillingService\.charge.*CardDeclinedError: Card declined for invoice \d+7/.test(row)),
    ).toBe(true);

    // The live worker and the leases it holds.
    const card = page.locator(`#workers [data-worker="${worker.worker.workerId!}"]`);
    expect(await shown(card.locator('.worker-id'), worker.worker.workerId!)).toBe(worker.worker.workerId);
    expect(await countOf(page, '#workers .lease', 4)).toBe(4);
    // Its record refreshes with each lease renewal; the page picks that up as it polls.
    expect(await shown(card, /done [1-9][\d,]* · up /)).toMatch(/concurrency 4 · holds 4 · done [1-9][\d,]* · up /);
    expect(await page.locator('#workers .lease .task').allTextContents()).toEqual(
      Array(4).fill('ExportService.exportCsv'),
    );

    // Charts of the last hour: stacked outcome bars, the enqueued line and the average wait.
    expect(await shown(page.locator('#throughput-note'), /enqueued · [\d,]+ finished · last hour$/)).toMatch(
      /enqueued/,
    );
    expect(await page.locator('#throughput svg rect.bar-succeeded').count()).toBeGreaterThan(30);
    expect(await page.locator('#throughput svg rect.bar-failed').count()).toBeGreaterThan(0);
    expect(await page.locator('#throughput svg path.line-enqueued').count()).toBeGreaterThan(0);
    expect(await page.locator('#latency svg path.line-wait').count()).toBeGreaterThan(0);
    expect(await shown(page.locator('#latency-note'), /^avg /)).toMatch(/^avg [\d.]+ (ms|s) over [\d,]+ starts/);

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    const png = await page.screenshot({ path: SCREENSHOT });
    // A PNG of the whole 1280×800 viewport: its signature, then the IHDR width and height.
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
    expect(readFileSync(SCREENSHOT).equals(png)).toBe(true);
    if (UPDATE_SCREENSHOT) console.log(`Screenshot written to ${SCREENSHOT}`);
    else rmSync(SCREENSHOT);

    // Hovering a minute shows its figures; the current minute is marked as still filling up.
    const chart = (await page.locator('#throughput svg').boundingBox())!;
    await page.mouse.move(chart.x + chart.width - 14, chart.y + chart.height / 2);
    const tip = await shown(page.locator('#throughput .tip'), /so far/);
    expect(tip).toMatch(
      /^\d\d:\d\d–\d\d:\d\d \(so far\)Enqueued [\d,]+Succeeded [\d,]+Failed [\d,]+Retried [\d,]+ · quarantined \d+ · cancelled \d+$/,
    );
    await page.close();
  });

  it('opens a failed run with its stack, and requeues it out of the failed list', async () => {
    // Without a worker the requeued run stays READY (a declined card would fail again).
    await worker.close();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(url);
    expect(await shown(page.locator('#queues tr.selected .qname'), 'billing')).toBe('billing');

    await page.locator('#segments [data-segment="failed"]').click();
    expect(await countOf(page, '#runs tbody tr', 6)).toBe(6);
    const [id] = declined;
    await page.locator(`#runs tr[data-run-id="${id}"]`).click();

    const detail = page.locator('#detail');
    expect(await shown(detail.locator('[data-field="id"]'), id!)).toBe(id);
    expect(await shown(detail.locator('.drawer-title .badge'), 'FAILED')).toBe('FAILED');
    expect(await detail.locator('[data-field="args"]').textContent()).toMatch(/^\[\n  1007,\n  \d+\n\]$/);
    expect(await detail.locator('.error-title').textContent()).toBe(
      'Attempt 1 · CardDeclinedError: Card declined for invoice 1007',
    );
    expect(await detail.locator('pre.stack').textContent()).toMatch(
      /Card declined for invoice 1007\n\s+at BillingService\.charge \(/,
    );

    await detail.locator('[data-action="requeue"]').click();
    expect(await shown(detail.locator('.drawer-title .badge'), 'READY')).toBe('READY');
    expect(await countOf(page, `#runs tr[data-run-id="${id}"]`, 0)).toBe(0);
    expect(await countOf(page, '#runs tbody tr', 5)).toBe(5);
    expect(await shown(page.locator('#segments [data-segment="failed"] .pill'), '5')).toBe('5');
    expect(await shown(page.locator('#toasts'), /Requeued run/)).toMatch(/Requeued run .*: now READY\./);

    await page.keyboard.press('Escape');
    expect(await detail.isHidden()).toBe(true);
    await page.locator('#segments [data-segment="ready"]').click();
    expect(await countOf(page, `#runs tr[data-run-id="${id}"]`, 1)).toBe(1);
    await page.close();
  });

  it("shows a running run's progress and log lines in its view, and follows them as they change", async () => {
    // The worker was closed by the test before: this run is leased by hand, as a worker would.
    const tasks = app.get(TaskQueue);
    const backend = app.get(TaskBackend);
    const { id } = await tasks.enqueue('ReportService.generate', ['rpt-progress', 10]);
    const [run] = await backend.claim(['default'], 1, 'host:9:0', 0);
    expect(run?.id).toBe(id);
    await backend.report([{ ...run!, progress: '{"rows":1200,"of":5000}', lines: ['reading invoices', 'page 1'] }]);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}#queue=default&segment=running&run=${id}`);
    const detail = page.locator('#detail');
    expect(await shown(detail.locator('.drawer-title .badge'), 'RUNNING')).toBe('RUNNING');
    expect(await shown(detail.locator('[data-field="progress"]'), /1200/)).toBe('{\n  "rows": 1200,\n  "of": 5000\n}');
    expect(await detail.locator('[data-field="logs"]').textContent()).toBe('reading invoices\npage 1');
    expect(await detail.locator('h3', { hasText: 'Logs' }).textContent()).toBe('Logs (last 2)');
    await backend.report([{ ...run!, progress: '{"rows":5000,"of":5000}', lines: ['done'] }]);
    expect(await shown(detail.locator('[data-field="logs"]'), /done$/)).toBe('reading invoices\npage 1\ndone');
    expect(await detail.locator('[data-field="progress"]').textContent()).toMatch(/"rows": 5000/);
    await page.close();
  });

  it('opens and dequeues runs whose ids are "." and "..", which a URL path cannot carry', async () => {
    const tasks = app.get(TaskQueue);
    await tasks.enqueueMany(
      ['.', '..'].map((id) => ({ task: 'ReportService.generate', args: [`rpt-${id}`, 10], delayMs: 3_600_000, id })),
    );
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}#queue=default&segment=deferred`);
    const detail = page.locator('#detail');

    await page.locator('#runs tr[data-run-id="."]').click();
    expect(await shown(detail.locator('[data-field="id"]'), '.')).toBe('.');
    expect(await detail.locator('[data-field="args"]').textContent()).toBe('[\n  "rpt-.",\n  10\n]');
    await detail.locator('[data-action="dequeue"]').click();
    await page.locator('#modal [data-action="confirm"]').click();
    expect(await shown(page.locator('#toasts'), /Dequeued run/)).toBe('Dequeued run ..');
    expect(await countOf(page, '#runs tr[data-run-id="."]', 0)).toBe(0);

    // Opened from a link, as an operator shares it.
    await page.goto(`${url}#queue=default&segment=deferred&run=..`);
    await page.reload();
    expect(await shown(detail.locator('[data-field="id"]'), '..')).toBe('..');
    expect(await detail.locator('[data-field="args"]').textContent()).toBe('[\n  "rpt-..",\n  10\n]');
    await detail.locator('[data-action="dequeue"]').click();
    await page.locator('#modal [data-action="confirm"]').click();
    expect(await countOf(page, '#runs tr[data-run-id=".."]', 0)).toBe(0);
    expect(
      await app
        .get(TaskInspector)
        .get('..')
        .catch((error: Error) => error.name),
    ).toBe('TaskResultNotFoundError');
    await page.close();
  });

  it("shows a queue's concurrency cap and rate limit in its row", async () => {
    const inspector = app.get(TaskInspector);
    await inspector.setConcurrencyCap('reports', 3);
    await inspector.setRateLimit('reports', { max: 10, perMs: 1_000 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(url);
    const row = page.locator('#queues tr[data-queue="reports"]');
    expect(await shown(row.locator('[data-cap="3"]'), 'CAP 3')).toBe('CAP 3');
    expect(await shown(row.locator('[data-rate="10/1000"]'), '10/1 s')).toBe('10/1 s');
    await inspector.setConcurrencyCap('reports', null);
    await inspector.setRateLimit('reports', null);
    await page.close();
  });

  it('cancels a deferred run with its Cancel button, and lists it in the cancelled tab', async () => {
    const tasks = app.get(TaskQueue);
    const run = await tasks.enqueue('ReportService.generate', ['rpt-cancel', 10], { delayMs: 3_600_000 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}#queue=default&segment=deferred&run=${encodeURIComponent(run.id)}`);
    const detail = page.locator('#detail');
    expect(await shown(detail.locator('[data-field="id"]'), run.id)).toBe(run.id);
    await detail.locator('[data-action="cancel"]').click();
    await page.locator('#modal [data-action="confirm"]').click();
    expect(await shown(page.locator('#toasts'), /Cancelled run/)).toMatch(/^Cancelled run /);
    expect((await tasks.getResult(run.id)).status).toBe('CANCELLED');
    await page.goto(`${url}#queue=default&segment=cancelled`);
    await page.reload();
    expect(await countOf(page, `#runs tr[data-run-id="${run.id}"]`, 1)).toBe(1);
    expect(await shown(page.locator('#segments [data-segment="cancelled"] .pill'), '1')).toBe('1');
    await page.close();
  });

  it("pauses and resumes a queue with its row's button, and marks it paused", async () => {
    const inspector = app.get(TaskInspector);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(url);
    const row = page.locator('#queues tr[data-queue="emails"]');
    await row.locator('[data-action="pause"]').click();
    expect(await shown(row.locator('[data-paused]'), 'PAUSED')).toBe('PAUSED');
    expect(await shown(page.locator('#toasts'), /Paused emails/)).toMatch(/Paused emails: no new run starts/);
    expect(await inspector.pauseState('emails')).toMatchObject({ paused: true });
    await row.locator('[data-action="resume"]').click();
    expect(await countOf(page, '#queues tr[data-queue="emails"] [data-paused]', 0)).toBe(0);
    expect(await shown(row.locator('[data-action="pause"]'), 'Pause')).toBe('Pause');
    expect(await inspector.pauseState('emails')).toMatchObject({ paused: false });
    await page.close();
  });

  it("shows Redis's memory in its header, and the capacity warning as a banner once a figure is over the threshold", async () => {
    // The shared Redis has no maxmemory: the header says so, and no banner shows.
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(url);
    expect(await shown(page.locator('#memory-text'), /no maxmemory/)).toMatch(
      /^[\d.]+ [KMG]?B \(no maxmemory\) · projected /,
    );
    expect(await page.locator('#capacity-warning').isVisible()).toBe(false);

    // An empty Redis uses about a megabyte: over 5% of 8 MB from the start.
    const small = await RedisServer.start({ args: ['--maxmemory', '8mb'] });
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: small.url, alias, queues: QUEUES, memoryWarningRatio: 0.05 }),
        ThreadmillDashboardModule.forRoot(),
      ],
    }).compile();
    const full = module.createNestApplication({ logger: ['error'] });
    try {
      await full.listen(0, '127.0.0.1');
      await page.goto(`${await full.getUrl()}/threadmill`);
      expect(await shown(page.locator('#capacity-warning'), /^Redis memory in use has reached/)).toMatch(
        /of maxmemory \(memoryWarningRatio 0\.05\): used [\d.]+ MB of maxmemory 8\.0 MB.*Lower resultTtlMs, raise maxmemory, or purge/,
      );
      expect(await page.locator('#capacity-warning').isVisible()).toBe(true);
      expect(await shown(page.locator('#memory-text'), /of 8\.0 MB/)).toMatch(/^[\d.]+ MB of 8\.0 MB · projected /);
    } finally {
      await page.close();
      await full.close();
      await small.stop();
    }
  });

  it("refuses a page on another name that resolves to the dashboard's address (DNS rebinding)", async () => {
    // Chromium resolves every *.localhost name to this machine, as a rebound DNS name resolves: the
    // attacker's page is then same-origin with the dashboard, and its Host header names the attacker's name.
    const origin = `http://rebind.localhost:${new URL(url).port}`;
    const page = await browser.newPage();
    await page.route(`${origin}/attack.html`, (route) =>
      route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>A page elsewhere</title>' }),
    );
    await page.goto(`${origin}/attack.html`);
    const attempt = await page.evaluate(async () => {
      const read = await fetch('/threadmill/api/overview');
      const act = await fetch('/threadmill/api/runs/requeue?id=any-run', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return { read: read.status, message: ((await read.json()) as { message: string }).message, act: act.status };
    });
    expect(attempt).toEqual({
      read: 421,
      message: expect.stringMatching(/^The Threadmill dashboard does not answer for host "rebind\.localhost"/),
      act: 421,
    });
    expect((await page.goto(`${origin}/threadmill`))!.status()).toBe(421);
    await page.close();
  });
});
