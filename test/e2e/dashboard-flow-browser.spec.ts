import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TaskQueue, ThreadmillModule, type EnqueuedFlow } from '@threadmill/nestjs';
import { ThreadmillDashboardModule } from '@threadmill/nestjs/dashboard';
import { setTimeout as delay } from 'node:timers/promises';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { TaskBackend } from '../../libs/threadmill/src/backend/task-backend.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { launchChromium } from '../support/browser.js';

const WORKER = 'host:1:0';
const add = (a: number, b: number, after?: string[]) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;

/** The trimmed text of `locator` once it matches `expected` (or whatever it shows after `timeoutMs`). */
async function shown(locator: Locator, expected: string | RegExp, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = ((await locator.textContent({ timeout: timeoutMs }).catch(() => '')) ?? '').trim();
    if ((typeof expected === 'string' ? text === expected : expected.test(text)) || Date.now() > deadline) return text;
    await delay(100);
  }
}

/** `locator`'s attribute `name` once it is `expected` (or whatever it is after `timeoutMs`). */
async function attribute(locator: Locator, name: string, expected: string, timeoutMs = 15_000): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await locator.getAttribute(name, { timeout: timeoutMs }).catch(() => null);
    if (value === expected || Date.now() > deadline) return value;
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

describe('a flow in the web dashboard, in a browser', () => {
  const alias = uniqueAlias('flows');
  let browser: Browser;
  let app: INestApplication;
  let url: string;
  let flow: EnqueuedFlow;
  /** The middle node claimed (RUNNING) with its lease's token, and the one left READY. */
  let running: string;
  let token: string;
  let ready: string;

  beforeAll(async () => {
    const launched = await launchChromium();
    browser = launched.browser;
    console.log(`The flow view's browser test drives ${launched.description}.`);
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias, queues: FIXTURE_QUEUES }),
        FixtureTasksModule,
        ThreadmillDashboardModule.forRoot(),
      ],
    }).compile();
    app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    url = `${await app.getUrl()}/threadmill`;

    // A diamond driven by hand: a succeeded, one of b and c running, the other ready, d waiting for both.
    flow = await app.get(TaskQueue).enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) },
    });
    const backend = app.get(TaskBackend) as RedisTaskBackend;
    const [root] = await backend.claim(['default'], 1, WORKER, 0);
    if (root?.id !== flow.nodes['a']) throw new Error(`claimed ${root?.id}, not the flow's root ${flow.nodes['a']}`);
    await backend.acknowledge([
      { id: root.id, queue: 'default', token: root.token, outcome: { kind: 'successful', returnValue: '2' } },
    ]);
    const [middle] = await backend.claim(['default'], 1, WORKER, 0);
    running = middle!.id;
    token = middle!.token;
    ready = running === flow.nodes['b'] ? flow.nodes['c']! : flow.nodes['b']!;
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('draws the four nodes of a diamond in columns by depth, each with its status, and opens a node’s run on a click', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await page.goto(`${url}#flow=${encodeURIComponent(flow.id)}`);
    const card = page.locator('#flow-card');
    expect(await shown(card.locator('#flow-id'), flow.id)).toBe(flow.id);
    expect(await countOf(page, '#flow-graph .flow-node', 4)).toBe(4);
    const node = (name: string) => card.locator(`.flow-node[data-flow-node="${name}"]`);
    const statusOf = async (name: string) => node(name).getAttribute('data-status');
    expect(await attribute(node('a'), 'data-status', 'SUCCESSFUL')).toBe('SUCCESSFUL');
    const nameOf = (id: string) => Object.entries(flow.nodes).find(([, runId]) => runId === id)![0];
    expect({
      a: await statusOf('a'),
      [nameOf(running)]: await statusOf(nameOf(running)),
      [nameOf(ready)]: await statusOf(nameOf(ready)),
      d: await statusOf('d'),
    }).toEqual({ a: 'SUCCESSFUL', [nameOf(running)]: 'RUNNING', [nameOf(ready)]: 'READY', d: 'WAITING' });
    // Each node shows its badge, and is coloured by its status.
    expect(await node('d').locator('.badge').textContent()).toBe('WAITING');
    expect(await node('a').getAttribute('class')).toContain('s-SUCCESSFUL');
    expect(await shown(card.locator('#flow-state .badge'), 'RUNNING')).toBe('RUNNING');
    expect(await shown(card.locator('#flow-note'), /^4 nodes · 4 edges/)).toMatch(/^4 nodes · 4 edges · /);

    // Columns by depth: a, then b and c one above the other, then d; an edge for each dependency.
    const box = async (name: string) => (await node(name).boundingBox())!;
    const [a, b, c, d] = [await box('a'), await box('b'), await box('c'), await box('d')];
    expect(a.x).toBeLessThan(b.x);
    expect(b.x).toBe(c.x);
    expect(b.y).not.toBe(c.y);
    expect(c.x).toBeLessThan(d.x);
    const edges = page.locator('#flow-graph path.flow-edge');
    const drawn = await Promise.all(
      Array.from({ length: await edges.count() }, (_, i) => edges.nth(i).getAttribute('data-edge')),
    );
    expect(drawn.sort()).toEqual(['a>b', 'a>c', 'b>d', 'c>d']);

    await node('d').click();
    const detail = page.locator('#detail');
    expect(await shown(detail.locator('[data-field="id"]'), flow.nodes['d']!)).toBe(flow.nodes['d']);
    expect(await shown(detail.locator('.drawer-title .badge'), 'WAITING')).toBe('WAITING');
    expect(await shown(detail.locator('[data-flow-link]'), `Flow: ${flow.id}`)).toBe(`Flow: ${flow.id}`);
    expect(page.url()).toContain(`run=${flow.nodes['d']}`);
    await page.close();
  });

  it("follows the flow as it runs, and opens it from a node run's detail (Flow: <id>)", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}#run=${encodeURIComponent(ready)}`);
    const detail = page.locator('#detail');
    expect(await shown(detail.locator('[data-field="id"]'), ready)).toBe(ready);
    expect(await page.locator('#flow-card').isHidden()).toBe(true);
    await detail.locator('[data-flow-link]').click();
    expect(await detail.isHidden()).toBe(true);
    expect(await countOf(page, '#flow-graph .flow-node', 4)).toBe(4);
    expect(page.url()).toContain(`flow=${flow.id}`);

    // The running node succeeds: its box turns SUCCESSFUL at a poll; d waits on for the other.
    const backend = app.get(TaskBackend) as RedisTaskBackend;
    await backend.acknowledge([
      { id: running, queue: 'default', token, outcome: { kind: 'successful', returnValue: '4' } },
    ]);
    const node = (id: string) => page.locator(`#flow-graph .flow-node[data-run-id="${id}"]`);
    expect(await attribute(node(running), 'data-status', 'SUCCESSFUL')).toBe('SUCCESSFUL');
    expect(await node(ready).getAttribute('data-status')).toBe('READY');
    expect(await node(flow.nodes['d']!).getAttribute('data-status')).toBe('WAITING');
    await page.keyboard.press('Escape');
    expect(await page.locator('#flow-card').isHidden()).toBe(true);
    await page.close();
  });
});
