import { Test } from '@nestjs/testing';
import { TaskStatus, ThreadmillModule, type TaskResult } from '@threadmill/nestjs';
import { ThreadmillDashboardModule, type DashboardOverview, type DashboardRunPage } from '@threadmill/nestjs/dashboard';
import { RedisServer } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES, MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { call, DashboardTestbed, post } from '../support/dashboard.js';
import { waitUntil } from '../support/wait.js';

describe('the web dashboard (ThreadmillDashboardModule)', () => {
  const bed = new DashboardTestbed();
  afterEach(() => bed.closeAll());

  it('answers the overview with the counts per segment, rates and totals of every queue', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const { status, body } = await call<DashboardOverview>(`${url}/api/overview`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ alias, readOnly: false, title: 'Threadmill', windowMinutes: 5 });
    expect(body.queues.map((q) => q.queue)).toEqual(['default', 'emails', 'reports']);
    const [defaults, emails] = body.queues;
    expect(defaults).toMatchObject({ ready: 2, deferred: 1, running: 0, successful: 3, failed: 2, quarantined: 0 });
    expect(defaults!.totals).toMatchObject({ enqueued: 8, succeeded: 3, failed: 2 });
    expect(defaults!.ingressPerSecond).toBeGreaterThan(0);
    expect(defaults!.egressPerSecond).toBeGreaterThan(0);
    expect(defaults!.oldestReadyAgeMs).toBeGreaterThanOrEqual(0);
    expect(emails).toMatchObject({
      ready: 0,
      deferred: 0,
      running: 0,
      successful: 0,
      failed: 0,
      oldestReadyAgeMs: null,
    });

    const metrics = await call(`${url}/api/queues/default/metrics?minutes=10`);
    expect(metrics.status).toBe(200);
    expect(metrics.body.minutes).toHaveLength(10);
    const sum = (key: string) => metrics.body.minutes.reduce((total: number, m: any) => total + m[key], 0);
    expect([sum('enqueued'), sum('started'), sum('succeeded'), sum('failed')]).toEqual([8, 5, 3, 2]);

    const workers = await call(`${url}/api/workers`);
    expect(workers).toMatchObject({ status: 200, body: { workers: [] } });
  });

  it("lists a segment's runs a page at a time and returns a run's record with its error stack", async () => {
    const alias = uniqueAlias('dash');
    const { failed, ready } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const page = await call<DashboardRunPage>(`${url}/api/queues/default/runs?segment=failed&limit=1`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ queue: 'default', segment: 'failed', offset: 0, limit: 1, total: 2 });
    expect(page.body.runs).toHaveLength(1);
    const second = await call<DashboardRunPage>(`${url}/api/queues/default/runs?segment=failed&offset=1&limit=1`);
    expect([...page.body.runs, ...second.body.runs].map((r) => r.id).sort()).toEqual(failed.map((r) => r.id).sort());
    const readyPage = await call<DashboardRunPage>(`${url}/api/queues/default/runs`);
    expect(readyPage.body.runs.map((r) => r.id)).toEqual(ready.map((r) => r.id));

    const { status, body } = await call<TaskResult>(`${url}/api/runs/${failed[0]!.id}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: failed[0]!.id,
      taskName: 'FailService.alwaysFail',
      queue: 'default',
      status: TaskStatus.FAILED,
      args: ['card declined'],
      attempts: 1,
    });
    expect(body.workerIds).toHaveLength(1);
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0]).toMatchObject({ errorClass: 'FixtureError', message: 'card declined', attempt: 1 });
    expect(body.errors[0]!.stack).toMatch(/card declined\n\s+at FailService\.alwaysFail \(/);
    expect(typeof body.finishedAt).toBe('string');

    const unknown = await call(`${url}/api/runs/no-such-run`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toMatch(/No task run with id "no-such-run"/);
    const badSegment = await call(`${url}/api/queues/default/runs?segment=done`);
    expect(badSegment.status).toBe(400);
    expect(badSegment.body.message).toMatch(
      /segment must be one of waiting, ready, deferred, running, successful, failed/,
    );
    const badLimit = await call(`${url}/api/queues/default/runs?limit=-3`);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.message).toMatch(/limit must be an integer from 1 to 500, got "-3"/);
    const unknownQueue = await call(`${url}/api/queues/nope/metrics`);
    expect(unknownQueue.status).toBe(404);
    expect(unknownQueue.body.message).toMatch(/No queue "nope" .*its queues are default, emails, reports/);
  });

  it('requeues a failed run and dequeues a pending one, answering 409 for a run in another state', async () => {
    const alias = uniqueAlias('dash');
    const { failed, succeeded, ready } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const requeued = await post<TaskResult>(`${url}/api/runs/${failed[0]!.id}/requeue`);
    expect(requeued.status).toBe(200);
    expect(requeued.body).toMatchObject({ id: failed[0]!.id, status: TaskStatus.READY, attempts: 1 });
    expect(requeued.body.errors).toHaveLength(1);
    const failedNow = await call<DashboardRunPage>(`${url}/api/queues/default/runs?segment=failed`);
    expect(failedNow.body.runs.map((r) => r.id)).toEqual([failed[1]!.id]);
    const readyNow = await call<DashboardRunPage>(`${url}/api/queues/default/runs?segment=ready`);
    expect(readyNow.body.runs.map((r) => r.id)).toContain(failed[0]!.id);

    const again = await post(`${url}/api/runs/${failed[0]!.id}/requeue`);
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/is READY; only FAILED, QUARANTINED or CANCELLED runs can be requeued/);
    const finished = await post(`${url}/api/runs/${succeeded[0]!.id}/dequeue`);
    expect(finished.status).toBe(409);
    expect(finished.body.message).toMatch(
      /is SUCCESSFUL; only READY \(or deferred\) or WAITING \(a flow node\) runs can be dequeued/,
    );
    const unknown = await post(`${url}/api/runs/no-such-run/requeue`);
    expect(unknown.status).toBe(404);

    const dequeued = await post(`${url}/api/runs/${ready[0]!.id}/dequeue`);
    expect(dequeued).toMatchObject({ status: 200, body: { id: ready[0]!.id, dequeued: true } });
    expect((await call(`${url}/api/runs/${ready[0]!.id}`)).status).toBe(404);
  });

  it('cancels a pending run (CANCELLED, listed), says so again, and answers 409 for a finished one', async () => {
    const alias = uniqueAlias('dash');
    const { succeeded, ready } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const cancelled = await post(`${url}/api/runs/${ready[0]!.id}/cancel`);
    expect(cancelled).toMatchObject({
      status: 200,
      body: { id: ready[0]!.id, cancelled: true, previousStatus: TaskStatus.READY },
    });
    const listed = await call<DashboardRunPage>(`${url}/api/queues/default/runs?segment=cancelled`);
    expect(listed.body.runs.map((r) => [r.id, r.status])).toEqual([[ready[0]!.id, TaskStatus.CANCELLED]]);
    const again = await post(`${url}/api/runs/cancel?id=${encodeURIComponent(ready[0]!.id)}`);
    expect(again.body).toMatchObject({ cancelled: false, previousStatus: TaskStatus.CANCELLED });
    const finished = await post(`${url}/api/runs/${succeeded[0]!.id}/cancel`);
    expect(finished.status).toBe(409);
    expect(finished.body.message).toMatch(
      /is SUCCESSFUL; only READY \(or deferred\), WAITING \(a flow node\) or RUNNING runs can be cancelled/,
    );
  });

  it('opens and acts on a run of any id with ?id=, "." and ".." included', async () => {
    const alias = uniqueAlias('dash');
    const producer = await bed.startHarness({ options: { alias } });
    const ids = ['.', '..', 'invoices/7', '?a=1#b', '%2e%2e', ' spaced '];
    for (const id of ids) await producer.queue.enqueue(MathService, 'add', [1, 2], { id });
    const { url } = await bed.startDashboard(alias);

    for (const id of ids) {
      const run = await call<TaskResult>(`${url}/api/runs?id=${encodeURIComponent(id)}`);
      expect({ id, status: run.status, body: run.body.id }).toEqual({ id, status: 200, body: id });
    }
    const dequeued = await post(`${url}/api/runs/dequeue?id=..`);
    expect(dequeued).toMatchObject({ status: 200, body: { id: '..', dequeued: true } });
    expect((await call(`${url}/api/runs?id=..`)).status).toBe(404);
    expect((await call(`${url}/api/runs?id=.`)).status).toBe(200);
    const missing = await call(`${url}/api/runs?id=`);
    expect(missing).toMatchObject({ status: 400, body: { message: '"" is not a run id (1-200 characters).' } });
    const twice = await post(`${url}/api/runs/requeue?id=a&id=b`);
    expect(twice).toMatchObject({ status: 400, body: { message: 'Name one run: give id once.' } });
  });

  it('purges a queue only when the body repeats its name', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const unconfirmed = await post(`${url}/api/queues/default/purge`);
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.body.message).toMatch(/To confirm, send the body \{ "confirm": "default" \} \(got no confirm\)/);
    const wrong = await post(`${url}/api/queues/default/purge`, { confirm: 'emails' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toMatch(/\(got "emails"\)/);
    const overview = await call<DashboardOverview>(`${url}/api/overview`);
    expect(overview.body.queues[0]).toMatchObject({
      queue: 'default',
      ready: 2,
      deferred: 1,
      successful: 3,
      failed: 2,
    });

    const purged = await post(`${url}/api/queues/default/purge`, { confirm: 'default' });
    expect(purged).toMatchObject({ status: 200, body: { queue: 'default', removed: 8 } });
    const after = await call<DashboardOverview>(`${url}/api/overview`);
    expect(after.body.queues[0]).toMatchObject({ ready: 0, deferred: 0, successful: 0, failed: 0 });
    const unknown = await post(`${url}/api/queues/nope/purge`, { confirm: 'nope' });
    expect(unknown.status).toBe(404);
  });

  it('requeues every run of a failed segment, and refuses a segment it cannot requeue', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const unnamed = await post(`${url}/api/queues/default/requeue-all`);
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.message).toMatch(/send the body \{ "segment": "failed" \}.*\(got no segment\)/);
    const ready = await post(`${url}/api/queues/default/requeue-all`, { segment: 'ready' });
    expect(ready.body.message).toMatch(/\(got "ready"\)/);
    const requeued = await post(`${url}/api/queues/default/requeue-all`, { segment: 'failed' });
    expect(requeued).toMatchObject({ status: 200, body: { queue: 'default', segment: 'failed', requeued: 2 } });
    const after = await call<DashboardOverview>(`${url}/api/overview`);
    expect(after.body.queues[0]).toMatchObject({ ready: 4, failed: 0 });
    expect((await post(`${url}/api/queues/nope/requeue-all`, { segment: 'failed' })).status).toBe(404);
  });

  it('pauses and resumes a queue, and the overview says it is paused', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);

    const paused = await post(`${url}/api/queues/emails/pause`);
    expect(paused).toMatchObject({ status: 200, body: { queue: 'emails', paused: true, changed: true } });
    expect(paused.body.pausedAt).toEqual(expect.any(Number));
    expect((await post(`${url}/api/queues/emails/pause`)).body).toMatchObject({ paused: true, changed: false });
    const overview = await call<DashboardOverview>(`${url}/api/overview`);
    expect(overview.body.queues.map((q) => [q.queue, q.paused])).toEqual([
      ['default', false],
      ['emails', true],
      ['reports', false],
    ]);
    expect(overview.body.queues[1]!.pausedAt).toBe(paused.body.pausedAt);
    const resumed = await post(`${url}/api/queues/emails/resume`);
    expect(resumed).toMatchObject({
      status: 200,
      body: { queue: 'emails', paused: false, pausedAt: null, changed: true },
    });
    expect((await call<DashboardOverview>(`${url}/api/overview`)).body.queues[1]).toMatchObject({ paused: false });
    expect((await post(`${url}/api/queues/nope/pause`)).status).toBe(404);
    expect((await post(`${url}/api/queues/bad%20name/pause`)).status).toBe(400);
    const crossSite = await post(`${url}/api/queues/emails/pause`, undefined, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expect((await call(`${url}/api/queues/emails/pause`, { method: 'POST' })).status).toBe(415);
    expect((await call<DashboardOverview>(`${url}/api/overview`)).body.queues[1]).toMatchObject({ paused: false });
  });

  it('in read-only mode answers 403 to every action and leaves them off the page', async () => {
    const alias = uniqueAlias('dash');
    const { failed, ready } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias, { readOnly: true });

    const answers = await Promise.all([
      post(`${url}/api/runs/${failed[0]!.id}/requeue`),
      post(`${url}/api/runs/${ready[0]!.id}/dequeue`),
      post(`${url}/api/queues/default/purge`, { confirm: 'default' }),
      post(`${url}/api/queues/default/pause`),
      post(`${url}/api/queues/default/resume`),
    ]);
    expect(answers.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    for (const answer of answers) expect(answer.body.message).toMatch(/read-only \(readOnly: true\)/);
    const overview = await call<DashboardOverview>(`${url}/api/overview`);
    expect(overview.body.readOnly).toBe(true);
    expect(overview.body.queues[0]).toMatchObject({ ready: 2, deferred: 1, failed: 2, paused: false });

    const page = await call<string>(url);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<body data-read-only="true">');
    expect(page.body).not.toContain('<th class="act">');
  });

  it('mounts at any path under the global prefix and serves a self-contained page', async () => {
    const alias = uniqueAlias('dash');
    const { app, url } = await bed.startDashboard(alias, { path: '/ops/queues/', title: 'Ops <queues>' }, 'admin');
    expect(url).toBe(`${await app.getUrl()}/admin/ops/queues/`);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'sha256-[^']+'; style-src 'sha256-/);
    const html = await page.text();
    expect(html).toContain('<title>Ops &lt;queues&gt;</title>');
    // Self-contained: no external script, stylesheet or font.
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!www\.w3\.org)/);
    const overview = await call<DashboardOverview>(`${url}api/overview`);
    expect(overview).toMatchObject({ status: 200, body: { alias, title: 'Ops <queues>' } });
    expect((await call(`${await app.getUrl()}/threadmill/api/overview`)).status).toBe(404);
  });

  it('refuses actions a browser sends on behalf of another site, and any that is not JSON', async () => {
    const alias = uniqueAlias('dash');
    const { failed } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);
    const refused = await post(`${url}/api/runs/${failed[0]!.id}/requeue`, undefined, {
      'sec-fetch-site': 'cross-site',
    });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/refuses actions requested by another site/);
    // A browser that sends no Sec-Fetch-Site: another site's form can post, but not JSON.
    const form = await call(`${url}/api/queues/default/purge`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'confirm=default',
    });
    expect(form.status).toBe(415);
    expect(form.body.message).toMatch(
      /actions take a JSON request \(Content-Type: application\/json\).*got "application\/x-www-form-urlencoded"/,
    );
    const bare = await call(`${url}/api/runs/${failed[0]!.id}/requeue`, { method: 'POST' });
    expect(bare.status).toBe(415);
    const run = await call<TaskResult>(`${url}/api/runs/${failed[0]!.id}`);
    expect(run.body.status).toBe(TaskStatus.FAILED);
    expect((await call<DashboardOverview>(`${url}/api/overview`)).body.queues[0]).toMatchObject({
      failed: 2,
      ready: 2,
    });
  });

  it('answers 503 naming Redis when Redis is gone, and recovers when it is back', async () => {
    const redis = await RedisServer.start();
    bed.closers.push(() => redis.stop());
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redis.url, queues: FIXTURE_QUEUES, connectTimeoutMs: 500 }),
        ThreadmillDashboardModule.forRoot(),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    bed.closers.unshift(() => app.close());
    const url = `${await app.getUrl()}/threadmill`;
    expect((await call(`${url}/api/overview`)).status).toBe(200);

    redis.pause();
    const startedAt = Date.now();
    const answers = await Promise.all([call(`${url}/api/overview`), call(`${url}/api/workers`)]);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(answers.map((answer) => answer.status)).toEqual([503, 503]);
    for (const answer of answers) expect(answer.body.message).toMatch(/Redis/);
    redis.resume();
    await waitUntil('the dashboard reads Redis again', async () => (await call(`${url}/api/overview`)).status === 200);
  });
});
