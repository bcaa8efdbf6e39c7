import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { call, callAs, DashboardTestbed, post, type Answer } from '../support/dashboard.js';

/** `confirm` nested `depth` arrays deep, as a JSON body: `{"confirm":[[[...]]]}`. */
const nested = (depth: number) => `{"confirm":${'['.repeat(depth)}${']'.repeat(depth)}}`;

const purge = (url: string, body: string) =>
  call(`${url}/api/queues/default/purge`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe("the web dashboard's HTTP answers", () => {
  const bed = new DashboardTestbed();
  afterEach(() => bed.closeAll());

  it('sends no-store, nosniff and same-origin headers, and no X-Powered-By, on every answer, refusals included', async () => {
    const alias = uniqueAlias('dash');
    const { failed, succeeded, ready } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);
    const guarded = await bed.startDashboard(alias, { guard: () => false });
    const readOnly = await bed.startDashboard(alias, { readOnly: true });

    const answers: Record<string, Answer> = {
      page: await call(url),
      overview: await call(`${url}/api/overview`),
      metrics: await call(`${url}/api/queues/default/metrics`),
      runs: await call(`${url}/api/queues/default/runs?segment=failed`),
      run: await call(`${url}/api/runs/${failed[0]!.id}`),
      'run by query': await call(`${url}/api/runs?id=${failed[0]!.id}`),
      workers: await call(`${url}/api/workers`),
      'unknown run (404)': await call(`${url}/api/runs/no-such-run`),
      'bad segment (400)': await call(`${url}/api/queues/default/runs?segment=done`),
      requeue: await post(`${url}/api/runs/${failed[0]!.id}/requeue`),
      dequeue: await post(`${url}/api/runs/dequeue?id=${ready[0]!.id}`),
      'wrong state (409)': await post(`${url}/api/runs/${succeeded[0]!.id}/requeue`),
      'not JSON (415)': await call(`${url}/api/runs/${failed[1]!.id}/requeue`, { method: 'POST' }),
      'unconfirmed purge (400)': await post(`${url}/api/queues/default/purge`),
      'too large (413)': await purge(url, JSON.stringify({ confirm: 'x'.repeat(5_000) })),
      'guard (403)': await call(`${guarded.url}/api/overview`),
      'read-only (403)': await post(`${readOnly.url}/api/runs/${failed[1]!.id}/requeue`),
      'host (421)': await callAs('rebind.attacker.example', `${url}/api/overview`),
    };
    const statuses = Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, answer.status]));
    expect(statuses).toEqual({
      page: 200,
      overview: 200,
      metrics: 200,
      runs: 200,
      run: 200,
      'run by query': 200,
      workers: 200,
      'unknown run (404)': 404,
      'bad segment (400)': 400,
      requeue: 200,
      dequeue: 200,
      'wrong state (409)': 409,
      'not JSON (415)': 415,
      'unconfirmed purge (400)': 400,
      'too large (413)': 413,
      'guard (403)': 403,
      'read-only (403)': 403,
      'host (421)': 421,
    });
    for (const [name, { headers }] of Object.entries(answers)) {
      const sent = {
        'cache-control': headers['cache-control'],
        'x-content-type-options': headers['x-content-type-options'],
        'cross-origin-resource-policy': headers['cross-origin-resource-policy'],
        'x-frame-options': headers['x-frame-options'],
        'x-powered-by': headers['x-powered-by'],
      };
      expect({ name, ...sent }).toEqual({
        name,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'cross-origin-resource-policy': 'same-origin',
        'x-frame-options': 'DENY',
        'x-powered-by': undefined,
      });
    }
    expect(answers.page!.headers['content-security-policy']).toMatch(/^default-src 'none'; script-src 'sha256-/);
  });

  it('refuses a body over 4 KiB before any handler: a 90 KB or 30,000-level confirm answers 413, nothing logged', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const logger = new CapturedLogger();
    const { url } = await bed.startDashboard(alias, {}, undefined, logger);

    const long = await purge(url, JSON.stringify({ confirm: 'x'.repeat(90_000) }));
    const deep = await purge(url, nested(30_000));
    for (const answer of [long, deep]) {
      expect(answer.status).toBe(413);
      expect(answer.body.message).toMatch(
        /^The Threadmill dashboard takes request bodies of at most 4096 bytes \(its largest is \{ "confirm": "<queue>" \}\); this one has \d+\.$/,
      );
    }
    const streamed = await callAs(new URL(url).host, `${url}/api/queues/default/purge`, {
      json: { confirm: 'default' },
      chunked: true,
    });
    expect(streamed.status).toBe(411);
    expect(streamed.body.message).toMatch(/takes a request body only with its Content-Length/);
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect((await call(`${url}/api/overview`)).body.queues[0]).toMatchObject({ ready: 2, failed: 2 });
  });

  it('describes a confirm that is not a string by its type, and cuts a long one short, logging nothing', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const logger = new CapturedLogger();
    const { url } = await bed.startDashboard(alias, {}, undefined, logger);
    const got = async (body: string) => {
      const answer = await purge(url, body);
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(/^Purging removes every run of queue "default" with its record\./);
      return /\(got (.*)\)\.$/.exec(answer.body.message)![1];
    };

    expect(await got(nested(1_500))).toBe('an array');
    expect(await got(JSON.stringify({ confirm: { queue: 'default' } }))).toBe('an object');
    expect(await got(JSON.stringify({ confirm: 7 }))).toBe('a number');
    expect(await got(JSON.stringify({ confirm: null }))).toBe('null');
    expect(await got(JSON.stringify({ confirm: 'y'.repeat(3_000) }))).toBe(`"${'y'.repeat(80)}"… (3000 characters)`);
    expect(await got(JSON.stringify({ confirm: 'emails' }))).toBe('"emails"');
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
  });
});
