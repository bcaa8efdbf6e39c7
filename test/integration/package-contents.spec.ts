import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv } from '../support/clean-env.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIBRARY = join(ROOT, 'libs/threadmill');

/** What `npm pack --dry-run --json` says of one package. */
interface PackReport {
  name: string;
  version: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: { path: string; size: number }[];
}

interface Manifest {
  exports: Record<string, { types: string; default: string } | string>;
  repository: { url: string };
}

/** The link targets of a markdown page outside its fenced code: inline links and images, and HTML attributes. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return [
    ...[...prose.matchAll(/\]\(([^)\s]+)/g)].map((match) => match[1]!),
    ...[...prose.matchAll(/^\[[^\]]+\]:\s*(\S+)/gm)].map((match) => match[1]!),
    ...[...prose.matchAll(/\b(?:src|srcset|href)="([^"]+)"/g)].map((match) => match[1]!),
  ];
}

/** `1.2 MB`, `651.6 kB`: sizes as npm prints them. */
function size(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

/**
 * What `npm publish` would upload of `@threadmill/nestjs`: the file list of
 * `npm pack --dry-run`, which runs the package's prepack (the copies of the
 * README, LICENSE and CHANGELOG) as a publish does, over the current build.
 */
describe('the published package', () => {
  let pack: PackReport;
  let files: Set<string>;
  const manifest = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8')) as Manifest;

  beforeAll(async () => {
    if (!existsSync(join(LIBRARY, 'dist/index.js'))) {
      throw new Error('libs/threadmill/dist is missing: run `npm run build` before this test.');
    }
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '-w', 'libs/threadmill'], {
      cwd: ROOT,
      env: cleanEnv(),
      timeout: 60_000,
    });
    pack = (JSON.parse(stdout) as PackReport[])[0]!;
    files = new Set(pack.files.map((file) => file.path));
  }, 90_000);

  it('carries its README, LICENSE, CHANGELOG and package.json', () => {
    for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) expect(files, file).toContain(file);
    console.log(
      `${pack.name}@${pack.version}: ${pack.entryCount} files, ${size(pack.size)} packed, ${size(pack.unpackedSize)} unpacked`,
    );
  });

  it("carries every entry point's types and code", () => {
    for (const [subpath, entry] of Object.entries(manifest.exports)) {
      const targets = typeof entry === 'string' ? [entry] : [entry.types, entry.default];
      for (const target of targets) expect(files, `${subpath}: ${target}`).toContain(posix.normalize(target));
    }
  });

  it('carries the compiled library only: no sources, tests, fixtures or build info', () => {
    const unexpected = [...files].filter(
      (path) =>
        !['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(path) &&
        !/^dist\/.+\.(?:js|d\.ts|js\.map|d\.ts\.map)$/.test(path),
    );
    expect(unexpected).toEqual([]);
    expect(
      [...files].filter((path) => /\.(?:spec|test)\.|(?:^|\/)(?:test|fixtures?)\/|tsbuildinfo/.test(path)),
    ).toEqual([]);
  });

  it('has no source map that points at a file it does not carry', () => {
    const broken: string[] = [];
    for (const path of files) {
      if (path.endsWith('.map')) {
        const map = JSON.parse(readFileSync(join(LIBRARY, path), 'utf8')) as { sources: string[] };
        for (const source of map.sources) {
          const resolved = posix.join(posix.dirname(path), source);
          if (!files.has(resolved)) broken.push(`${path} -> ${resolved}`);
        }
      } else if (/\.(?:js|d\.ts)$/.test(path)) {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(LIBRARY, path), 'utf8'))?.[1];
        const resolved = url && posix.join(posix.dirname(path), url);
        if (resolved && !files.has(resolved)) broken.push(`${path} -> ${resolved}`);
      }
    }
    // A leftover of a build that still emitted maps: `npm run clean && npm run build`.
    expect(broken, 'source maps whose sources are not packed (stale ones: npm run clean && npm run build)').toEqual([]);
  });

  it('links its README and CHANGELOG to the repository, since the docs/ they link to are not in it', () => {
    const repository = manifest.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    for (const page of ['README.md', 'CHANGELOG.md']) {
      const copy = readFileSync(join(LIBRARY, page), 'utf8');
      expect(copy.split('\n')[0], page).toBe(readFileSync(join(ROOT, page), 'utf8').split('\n')[0]);
      const relative = linkTargets(copy).filter((target) => !/^(?:https:\/\/|#)/.test(target));
      expect(relative, page).toEqual([]);
      expect(copy, page).toContain(`${repository}/blob/v${pack.version}/docs/`);
    }
  });
});
