import { Injectable, Module, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TaskInspector, ThreadmillConfigError, ThreadmillModule } from '@threadmill/nestjs';
import {
  ThreadmillDashboardModule,
  type DashboardOverview,
  type ThreadmillDashboardOptions,
} from '@threadmill/nestjs/dashboard';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { call, callAs, DashboardTestbed, post } from '../support/dashboard.js';

/** Configuration as an application provides it (a stand-in for `ConfigService`), for `forRootAsync`. */
@Injectable()
class OpsSettings {
  readonly token = 'ops-token';
  readonly production = true;
}

@Module({ providers: [OpsSettings], exports: [OpsSettings] })
class OpsSettingsModule {}

/** A service of a module that is not global, as an application's user service is. */
@Injectable()
class OperatorDirectory {
  isOperator(token: string | undefined): boolean {
    return token === 'operator-1';
  }
}

@Module({ providers: [OperatorDirectory], exports: [OperatorDirectory] })
class OperatorsModule {}

/** An application's auth guard, depending on a provider of a non-global module. */
@Injectable()
class OperatorGuard implements CanActivate {
  constructor(private readonly directory: OperatorDirectory) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return this.directory.isOperator(request.headers['x-operator']);
  }
}

/** A Nest guard with a dependency: lets through requests that name the backend's alias. */
@Injectable()
class AliasHeaderGuard implements CanActivate {
  constructor(private readonly inspector: TaskInspector) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return request.headers['x-backend'] === this.inspector.alias;
  }
}

/** Compiles an app whose dashboard options come from `useFactory` (forRootAsync). */
const bootDashboardAsync = (useFactory: () => object) =>
  Test.createTestingModule({
    imports: [
      ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, alias: uniqueAlias('dash') }),
      ThreadmillDashboardModule.forRootAsync({ useFactory }),
    ],
  }).compile();

/** The status of `GET api/overview` of the dashboard at `url` for each of `hosts`. */
const statusesFor = async (url: string, hosts: string[], headers?: Record<string, string>) =>
  (await Promise.all(hosts.map((host) => callAs(host, `${url}/api/overview`, { headers })))).map((a) => a.status);

/** A guard that checks the caller's credentials: a page on another name has none of them. */
const tokenGuard = (request: { headers: Record<string, string | undefined> }) =>
  request.headers['x-operator-token'] === 'let-me-in';

describe("the web dashboard's guards and async options", () => {
  const bed = new DashboardTestbed();
  afterEach(() => bed.closeAll());

  it('lets the guard protect the page and the API, answering 403 when it returns false', async () => {
    const alias = uniqueAlias('dash');
    const { failed } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias, {
      guard: async (request: { headers: Record<string, string | undefined> }) =>
        request.headers['x-operator-token'] === 'let-me-in',
    });
    const operator = { 'x-operator-token': 'let-me-in' };

    const refused = await Promise.all([
      call(url),
      call(`${url}/api/overview`),
      call(`${url}/api/runs/${failed[0]!.id}`),
      post(`${url}/api/runs/${failed[0]!.id}/requeue`),
      call(`${url}/api/overview`, { headers: { 'x-operator-token': 'guess' } }),
    ]);
    expect(refused.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    expect(refused[1]!.body.message).toMatch(/its guard .* did not return true/);
    expect((await call(`${url}/api/runs/${failed[0]!.id}`)).status).toBe(403);

    const page = await call<string>(url, { headers: operator });
    expect(page.status).toBe(200);
    expect(page.type).toBe('text/html; charset=utf-8');
    expect(page.body).toMatch(/^<!doctype html>/);
    expect(page.body).toContain('<title>Threadmill</title>');
    const api = await call<DashboardOverview>(`${url}/api/overview`, { headers: operator });
    expect(api.status).toBe(200);
    expect(api.body.queues[0]).toMatchObject({ failed: 2 });
  });

  it('without a guard, refuses reads and actions for a host name it was not given (DNS rebinding)', async () => {
    const alias = uniqueAlias('dash');
    const { failed } = await bed.seed(alias);
    const { url } = await bed.startDashboard(alias);
    const port = new URL(url).port;
    // A page on the attacker's name whose address now points here: the browser sends that name as the Host.
    const attacker = `rebind.attacker.example:${port}`;

    const refused = await Promise.all([
      callAs(attacker, url),
      callAs(attacker, `${url}/api/overview`),
      callAs(attacker, `${url}/api/runs/${failed[0]!.id}/requeue`, { json: {} }),
    ]);
    expect(refused.map((a) => a.status)).toEqual([421, 421, 421]);
    expect(refused[1]!.body.message).toBe(
      'The Threadmill dashboard does not answer for host "rebind.attacker.example": without a guard it answers ' +
        'only IP addresses and localhost, so that a page on another domain cannot reach it through DNS. To open ' +
        'it by this name, add "rebind.attacker.example" to ThreadmillDashboardModule.forRoot({ allowedHosts }), ' +
        'and give it a guard if anyone else can reach it.',
    );
    expect(JSON.stringify(refused[1]!.body)).not.toContain('"queues"');
    expect((await call(`${url}/api/runs/${failed[0]!.id}`)).body.status).toBe('FAILED');

    const answered = await Promise.all(
      [`localhost:${port}`, `LOCALHOST.:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '10.1.2.3'].map((host) =>
        callAs(host, `${url}/api/overview`),
      ),
    );
    expect(answered.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
  });

  it('answers the names in allowedHosts, and any name once a guard protects it', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const listed = await bed.startDashboard(alias, { allowedHosts: ['queues.example.com', '*.ops.example.com'] });
    expect(
      await statusesFor(listed.url, ['queues.example.com:443', 'eu.ops.example.com', 'ops.example.com', 'example.com']),
    ).toEqual([200, 200, 421, 421]);
    const other = await callAs('example.com', `${listed.url}/api/overview`);
    expect(other.body.message).toMatch(
      /answers IP addresses, localhost and queues\.example\.com, \*\.ops\.example\.com, .* add "example\.com" to ThreadmillDashboardModule\.forRoot\(\{ allowedHosts \}\)/,
    );

    const operator = { 'x-operator-token': 'let-me-in' };
    const guarded = await bed.startDashboard(alias, { guard: tokenGuard });
    expect(await statusesFor(guarded.url, ['queues.example.com', 'rebind.attacker.example'])).toEqual([403, 403]);
    expect(await statusesFor(guarded.url, ['queues.example.com'], operator)).toEqual([200]);
    // With both, the host is checked first.
    const both = await bed.startDashboard(alias, { guard: tokenGuard, allowedHosts: ['queues.example.com'] });
    expect(await statusesFor(both.url, ['queues.example.com', 'rebind.attacker.example'], operator)).toEqual([
      200, 421,
    ]);
  });

  it('accepts a Nest guard class, created with dependency injection', async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const { url } = await bed.startDashboard(alias, { guard: AliasHeaderGuard });
    expect((await call(`${url}/api/overview`)).status).toBe(403);
    expect((await call(`${url}/api/overview`, { headers: { 'x-backend': 'another' } })).status).toBe(403);
    const allowed = await call<DashboardOverview>(`${url}/api/overview`, { headers: { 'x-backend': alias } });
    expect(allowed.status).toBe(200);
    expect(allowed.body.alias).toBe(alias);
  });

  it("creates a guard class with its module's dependencies through forRootAsync imports, and fails the boot without them", async () => {
    const alias = uniqueAlias('dash');
    await bed.seed(alias);
    const threadmill = () => ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, alias });
    const module = await Test.createTestingModule({
      imports: [
        threadmill(),
        ThreadmillDashboardModule.forRootAsync({
          imports: [OperatorsModule],
          useFactory: () => ({ guard: OperatorGuard }),
        }),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    bed.closers.push(() => app.close());
    const url = `${await app.getUrl()}/threadmill/api/overview`;
    expect((await call(url)).status).toBe(403);
    expect((await call(url, { headers: { 'x-operator': 'operator-1' } })).status).toBe(200);

    // Without its module the guard cannot be created: the boot fails, saying how to fix it.
    const broken = await Test.createTestingModule({
      imports: [threadmill(), ThreadmillDashboardModule.forRoot({ guard: OperatorGuard })],
    }).compile();
    const brokenApp = broken.createNestApplication({ logger: false });
    bed.closers.push(() => brokenApp.close());
    await expect(brokenApp.init()).rejects.toThrow(
      /guard: cannot create OperatorGuard \(.*OperatorDirectory.*\); register it as a provider of your application, make its dependencies global, or import their modules with ThreadmillDashboardModule\.forRootAsync/,
    );
  });

  it('takes readOnly, guard and title from an injected factory with forRootAsync, at a static path', async () => {
    const alias = uniqueAlias('dash');
    const { failed } = await bed.seed(alias);
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, alias }),
        ThreadmillDashboardModule.forRootAsync({
          path: 'ops/queues',
          imports: [OpsSettingsModule],
          inject: [OpsSettings],
          useFactory: async (settings: OpsSettings) => ({
            readOnly: settings.production,
            title: 'Ops queues',
            guard: (request: { headers: Record<string, string | undefined> }) =>
              request.headers['x-ops-token'] === settings.token,
          }),
        }),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    bed.closers.push(() => app.close());
    const url = `${await app.getUrl()}/ops/queues`;
    const operator = { 'x-ops-token': 'ops-token' };

    expect((await call(url)).status).toBe(403);
    const page = await call<string>(url, { headers: operator });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>Ops queues</title>');
    expect(page.body).toContain('<body data-read-only="true">');
    const requeue = await post(`${url}/api/runs/${failed[0]!.id}/requeue`, undefined, operator);
    expect(requeue.status).toBe(403);
    expect(requeue.body.message).toMatch(/read-only/);
    const overview = await call<DashboardOverview>(`${url}/api/overview`, { headers: operator });
    expect(overview.body).toMatchObject({ readOnly: true, title: 'Ops queues' });
    expect(overview.body.queues[0]).toMatchObject({ failed: 2 });
  });

  it("refuses a factory's invalid options when the app boots, and a path from the factory", async () => {
    await expect(bootDashboardAsync(() => ({ readOnly: 'no', theme: 'dark' }))).rejects.toThrow(
      new RegExp(
        [
          String.raw`Invalid Threadmill options \(2 problems\):`,
          String.raw`  - theme: unknown option \(given 'dark'\); remove it or check its spelling`,
          String.raw`  - readOnly: got 'no'; readOnly must be a boolean value \(rule: isBoolean\)`,
          String.raw`Fix these fields in ThreadmillDashboardModule.forRootAsync\(\).`,
        ].join('\n'),
      ),
    );
    await expect(bootDashboardAsync(() => ({ path: '/elsewhere' }))).rejects.toThrow(
      /path: the factory cannot set it \(routes exist before providers\); give it beside useFactory/,
    );
    expect(() => ThreadmillDashboardModule.forRootAsync({ path: '/a/:b', useFactory: () => ({}) })).toThrow(
      /path: got '\/a\/:b'.*\n.*forRootAsync\(\)/,
    );
  });

  it("refuses an allowedHosts that is not 'any' or a list of host names", () => {
    for (const allowedHosts of ['*', ['queues.example.com:8080'], ['https://queues.example.com'], [42]]) {
      expect(() =>
        ThreadmillDashboardModule.forRoot({ allowedHosts } as unknown as ThreadmillDashboardOptions),
      ).toThrow(/allowedHosts: got .*; allowedHosts must be 'any' or an array of host names without a port/);
    }
  });

  it('refuses invalid options, naming every bad field', () => {
    const bad = {
      path: 'threadmill/:id',
      readOnly: 'yes',
      guard: 42,
      colour: 'red',
    } as unknown as ThreadmillDashboardOptions;
    expect(() => ThreadmillDashboardModule.forRoot(bad)).toThrow(ThreadmillConfigError);
    expect(() => ThreadmillDashboardModule.forRoot(bad)).toThrow(
      new RegExp(
        [
          String.raw`Invalid Threadmill options \(4 problems\):`,
          String.raw`  - colour: unknown option \(given 'red'\); remove it or check its spelling`,
          String.raw`  - path: got '/threadmill/:id'; path must be made of "/"-separated segments.*\(rule: matches\)`,
          String.raw`  - readOnly: got 'yes'; readOnly must be a boolean value \(rule: isBoolean\)`,
          String.raw`  - guard: got 42; guard must be a function \(request\) => boolean \| Promise<boolean>, a CanActivate class or a CanActivate instance \(rule: isDashboardGuard\)`,
          String.raw`Fix these fields in ThreadmillDashboardModule.forRoot\(\).`,
        ].join('\n'),
      ),
    );
  });
});
