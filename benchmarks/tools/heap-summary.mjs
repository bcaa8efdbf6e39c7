#!/usr/bin/env node
// Summarises a sampling heap profile (heap-sampler.mjs): bytes allocated
// per run by the functions that allocated most, over the whole process.
// Usage: node heap-summary.mjs profile.json runs [N]
import { readFileSync } from 'node:fs';

const [file, runs, top = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const self = new Map();
let total = 0;
const visit = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const key = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  total += node.selfSize;
  if (node.selfSize > 0) self.set(key, (self.get(key) ?? 0) + node.selfSize);
  node.children.forEach(visit);
};
visit(profile.head);
const what = process.env.HEAP === 'survivors' ? 'survived a scavenge' : 'allocated';
console.log(`${what}: ${(total / 2 ** 20).toFixed(1)} MB, ${Math.round(total / runs)} bytes per run`);
for (const [key, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
  console.log(`${String(Math.round(bytes / runs)).padStart(6)}  ${key}`);
