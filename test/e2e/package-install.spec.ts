import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { cleanEnv } from '../support/clean-env.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIBRARY = join(ROOT, 'libs/threadmill');
const APP_SOURCE = fileURLToPath(new URL('./packaged-app/', import.meta.url));

/** The versions this repository builds and tests with, so the fresh app installs what is known to work. */
function versionsOf(names: readonly string[]): Record<string, string> {
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  return Object.fromEntries(names.map((name) => [name, root.dependencies[name] ?? root.devDependencies[name]!]));
}

/**
 * The library as a user installs it: `npm pack` of the build, installed into
 * a fresh app in a temporary directory with its peer dependencies, compiled
 * there with the app's own TypeScript, and run against a real redis-server.
 */
describe('the packed library in a fresh app', () => {
  let dir: string;
  let tarball: string;

  beforeAll(async () => {
    if (!existsSync(join(LIBRARY, 'dist/index.js'))) {
      throw new Error('libs/threadmill/dist is missing: run `npm run build` before the end-to-end tests.');
    }
    dir = mkdtempSync(join(tmpdir(), 'threadmill-packed-'));
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: LIBRARY, env: cleanEnv() });
    tarball = join(dir, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
    const app = join(dir, 'app');
    cpSync(APP_SOURCE, app, { recursive: true });
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify(
        {
          name: 'packed-app',
          private: true,
          type: 'module',
          dependencies: {
            '@threadmill/nestjs': `file:${tarball}`,
            ...versionsOf([
              '@nestjs/common',
              '@nestjs/core',
              '@nestjs/microservices',
              '@nestjs/testing',
              'class-transformer',
              'class-validator',
              'ioredis',
              'reflect-metadata',
              'rxjs',
            ]),
          },
          devDependencies: versionsOf(['typescript', '@types/node']),
        },
        null,
        2,
      ),
    );
    // From npm's cache when it holds everything; the registry otherwise.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      env: cleanEnv(),
      timeout: 120_000,
    });
    await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app });
  }, 150_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('packs the compiled library only, its entry points and their types, with its README, LICENSE and CHANGELOG', () => {
    const installed = join(dir, 'app/node_modules/@threadmill/nestjs');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string } | string>;
      peerDependencies: Record<string, string>;
      dependencies: Record<string, string>;
    };
    for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md'])
      expect(existsSync(join(installed, file)), file).toBe(true);
    for (const entry of Object.values(manifest.exports)) {
      const files = typeof entry === 'string' ? [entry] : [entry.types, entry.default];
      for (const file of files) expect(existsSync(join(installed, file)), file).toBe(true);
    }
    // The Lua scripts travel inside the build.
    expect(readFileSync(join(installed, 'dist/backend/redis/scripts/lua-sources.generated.js'), 'utf8')).toMatch(
      /acknowledge/,
    );
    expect(existsSync(join(installed, 'src'))).toBe(false);
    // One copy of class-validator and class-transformer: the app's.
    expect(Object.keys(manifest.peerDependencies)).toEqual(
      expect.arrayContaining(['class-validator', 'class-transformer']),
    );
    expect(Object.keys(manifest.dependencies)).not.toContain('class-validator');
    expect(existsSync(join(installed, 'node_modules/class-validator'))).toBe(false);
    expect(existsSync(join(installed, 'node_modules/class-transformer'))).toBe(false);
  });

  it("runs a producer's run on a worker, and validates DTOs with the app's class-validator", async () => {
    const app = join(dir, 'app');
    const env = cleanEnv({ REDIS_URL: redisUrl(), THREADMILL_ALIAS: uniqueAlias('packed') });
    const worker = spawn(process.execPath, ['dist/worker.js', '--workers', '1', '--concurrency', '2'], {
      cwd: app,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    worker.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
    worker.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    try {
      const { stdout } = await run(process.execPath, ['dist/producer.js'], { cwd: app, env, timeout: 60_000 });
      const outcome = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        status: string;
        returnValue: string;
        refused: string;
      };
      expect(outcome.status).toBe('SUCCESSFUL');
      expect(outcome.returnValue).toBe('Hello, Ada (a GreetingDto)');
      expect(outcome.refused).toMatch(/greeting must be longer than or equal to 2 characters/);
    } finally {
      worker.kill('SIGTERM');
    }
    expect(await exited, log).toBe(0);
    expect(log).toMatch(/consuming default/);
  });

  it('serves @threadmill/nestjs/testing from the tarball: RedisServer, and the app booted on ThreadmillTestingModule without Redis', async () => {
    const { stdout } = await run(process.execPath, ['dist/testing.js'], {
      cwd: join(dir, 'app'),
      // The app's own Redis is a closed port: only the testing module can make it boot.
      env: cleanEnv({ REDIS_URL: 'redis://127.0.0.1:1' }),
      timeout: 30_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      redis: 'PONG',
      immediate: { status: 'SUCCESSFUL', returnValue: 'Hi, Grace (a GreetingDto)' },
    });
  });
});
