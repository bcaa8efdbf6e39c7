import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { nodeBinary } from '../../scripts/node-binary.mjs';
import { extractSnippets } from '../support/doc-snippets.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { cleanEnv } from '../support/clean-env.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIBRARY = join(ROOT, 'libs/threadmill');
const APP_FILES = fileURLToPath(new URL('./packaged-app/', import.meta.url));

/** The versions this repository builds and tests with, so the fresh apps install what is known to work. */
function versionsOf(names: readonly string[]): Record<string, string> {
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  return Object.fromEntries(names.map((name) => [name, root.dependencies[name] ?? root.devDependencies[name]!]));
}

/**
 * The node that runs the CommonJS app's Jest. Jest loads ES module packages
 * (Nest 12's own, and this one) into a CommonJS test only through
 * `require(esm)` on Node 24.9 or later (with `--experimental-vm-modules`,
 * which the template's test script passes): on Node 20 and 22 every suite
 * fails with "Must use import to load ES Module". So on an older node than
 * that, a Node 24 from the npm registry runs it; the current node otherwise.
 */
function jestNode(): string {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 24 || (major === 24 && minor >= 9) ? process.execPath : nodeBinary('^24.9.0');
}

/** What `nest new` (Nest 12's CLI) writes differently for each kind of app. */
interface AppKind {
  readonly label: string;
  /**
   * Its folder: `packaged-app/<name>` holds the template's configuration
   * files. Not `esm`: Vitest inlines, rather than imports, CommonJS packages
   * under a folder of that name (ioredis then fails to load).
   */
  readonly name: 'esm-vitest' | 'cjs-jest';
  /** package.json's `type`; none is CommonJS. */
  readonly type?: 'module';
  /** The template's `test` script. */
  readonly testScript: string;
  /** The test runner, at versions pinned here. */
  readonly devDependencies: Record<string, string>;
  /** A source file as the template writes relative imports. */
  readonly source: (code: string) => string;
  /** The node that runs the app's `npm test`. */
  readonly testNode: () => string;
  /** The runner's line saying every test of the app's ran and passed. */
  readonly passed: RegExp;
}

const KINDS: readonly AppKind[] = [
  {
    label: 'ES module app tested with Vitest (nest new)',
    name: 'esm-vitest',
    type: 'module',
    testScript: 'vitest run',
    devDependencies: versionsOf(['vite', 'vitest']),
    source: (code) => code,
    testNode: () => process.execPath,
    passed: /Tests\s+4 passed \(4\)/,
  },
  {
    label: 'CommonJS app tested with Jest (nest new --type cjs)',
    name: 'cjs-jest',
    testScript: 'node --experimental-vm-modules ./node_modules/jest/bin/jest.js',
    // jest.config.ts needs no ts-node: Node 24 strips its types.
    devDependencies: { jest: '30.5.2', 'ts-jest': '29.4.15', '@types/jest': '30.0.0' },
    // Extensionless: Jest resolves a test's imports itself, and `./x.js` names no file of the sources.
    source: (code) => code.replace(/(from '\.{1,2}\/[^']+)\.js'/g, "$1'"),
    testNode: jestNode,
    passed: /Tests:\s+4 passed, 4 total/,
  },
];

/** The worker entry script of the getting-started page, as users copy it. */
function docsWorkerEntry(): string {
  const page = 'docs/getting-started.md';
  const entry = extractSnippets(page, readFileSync(join(ROOT, page), 'utf8')).find((s) => s.fileName === 'worker.ts');
  if (!entry) throw new Error(`${page} has no worker.ts block any more: the apps run the docs' worker entry.`);
  return `${entry.code}\n`;
}

/**
 * One app of `kind` in `dir`: the shared sources, the docs' worker entry,
 * the template's configuration, and a package.json with the tarball, its
 * peers and the test runner; installed, then compiled with the app's own
 * TypeScript on the template's tsconfig.json, which takes in the specs too,
 * so one compile checks them against the runner's types and builds the
 * scripts (under dist/src).
 */
async function createApp(kind: AppKind, dir: string, tarball: string): Promise<void> {
  cpSync(join(APP_FILES, kind.name), dir, { recursive: true });
  mkdirSync(join(dir, 'src'));
  for (const file of readdirSync(join(APP_FILES, 'src'))) {
    writeFileSync(join(dir, 'src', file), kind.source(readFileSync(join(APP_FILES, 'src', file), 'utf8')));
  }
  writeFileSync(join(dir, 'src/worker.ts'), docsWorkerEntry());
  const manifest = {
    name: `packed-${kind.name}-app`,
    version: '0.0.1',
    private: true,
    ...(kind.type && { type: kind.type }),
    scripts: { test: kind.testScript },
    dependencies: {
      '@threadmill/nestjs': `file:${tarball}`,
      ...versionsOf([
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/microservices',
        'class-transformer',
        'class-validator',
        'ioredis',
        'reflect-metadata',
        'rxjs',
      ]),
    },
    devDependencies: { ...versionsOf(['@nestjs/testing', '@types/node', 'typescript']), ...kind.devDependencies },
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // From npm's cache (one for both apps) when it holds everything; the registry otherwise.
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    env: cleanEnv(),
    timeout: 240_000,
  });
  await run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir });
}

/**
 * The library as a user installs it: `npm pack` of the build, installed into
 * the two apps `nest new` makes, each in a temporary directory with its peer
 * dependencies and its test runner, compiled there with the app's own
 * TypeScript, run against a real redis-server, and tested with its own
 * `npm test`. Its tests run at once (nothing in them is timed), each
 * process waiting for the machine as long as it needs.
 */
describe.concurrent('the packed library in fresh apps', () => {
  let dir: string;
  const testNodes = new Map<AppKind, string>();
  const appDir = (kind: AppKind) => join(dir, kind.name);

  beforeAll(async () => {
    if (!existsSync(join(LIBRARY, 'dist/index.js'))) {
      throw new Error('libs/threadmill/dist is missing: run `npm run build` before the end-to-end tests.');
    }
    dir = mkdtempSync(join(tmpdir(), 'threadmill-packed-'));
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: LIBRARY, env: cleanEnv() });
    const tarball = join(dir, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
    const apps = Promise.all(KINDS.map((kind) => createApp(kind, appDir(kind), tarball)));
    // While npm installs (a Node 24 may be installed here, blocking this process, not npm's).
    for (const kind of KINDS) testNodes.set(kind, kind.testNode());
    await apps;
  }, 300_000);
  afterAll(() => {
    // Some 20,000 files: removing them takes half a minute on a busy machine, which the run need not wait for.
    if (dir) spawn('rm', ['-rf', dir], { detached: true, stdio: 'ignore' }).unref();
  });

  it('packs the compiled library only, its entry points and their types, with its README, LICENSE and CHANGELOG', ({
    expect,
  }) => {
    const installed = join(appDir(KINDS[0]!), 'node_modules/@threadmill/nestjs');
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

  for (const kind of KINDS) {
    describe(`the ${kind.label}`, () => {
      it("runs a producer's task and handler runs on the docs' worker entry, and validates DTOs with the app's class-validator", async ({
        expect,
      }) => {
        const env = cleanEnv({ REDIS_URL: redisUrl(), THREADMILL_ALIAS: uniqueAlias(`packed-${kind.name}`) });
        const worker = spawn(process.execPath, ['dist/src/worker.js', '--workers', '1', '--concurrency', '2'], {
          cwd: appDir(kind),
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let log = '';
        worker.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
        worker.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
        try {
          const { stdout } = await run(process.execPath, ['dist/src/producer.js'], {
            cwd: appDir(kind),
            env,
            timeout: 60_000,
          });
          expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
            task: { status: 'SUCCESSFUL', returnValue: 'Hello, Ada (a GreetingDto)' },
            handler: { status: 'SUCCESSFUL', returnValue: 'HELLO!' },
            refused: expect.stringMatching(/greeting must be longer than or equal to 2 characters/),
          });
        } finally {
          worker.kill('SIGTERM');
        }
        expect(await exited, log).toBe(0);
        expect(log).toMatch(/consuming default/);
      }, 90_000);

      it('passes its own npm test: a @Task() method and a @MessagePattern handler on ThreadmillTestingModule, and RedisServer', async ({
        expect,
      }) => {
        const node = testNodes.get(kind)!;
        const { stdout, stderr } = await run('npm', ['test'], {
          cwd: appDir(kind),
          // npm, and the `node` of the test script, are the test node.
          env: cleanEnv({ PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}` }),
          timeout: 120_000,
        });
        expect(`${stdout}\n${stderr}`).toMatch(kind.passed);
      }, 150_000);
    });
  }
});
