#!/usr/bin/env node
// Summarises a V8 .cpuprofile: self time per function, top N, as a share of
// the profile. Usage: node profile-summary.mjs file.cpuprofile [N]
// WINDOW=<function name> keeps only the samples from the first to the last
// whose stack holds that function (e.g. WINDOW=record: the drain, without
// the process's boot and shutdown).
import { readFileSync } from 'node:fs';

const [file, top = '30'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const self = new Map();
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
let dt = profile.timeDeltas;
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const holds = (id, name) => {
  for (let at = id; at !== undefined; at = parent.get(at))
    if (byId.get(at).callFrame.functionName === name) return true;
  return false;
};
if (process.env.WINDOW) {
  const inside = profile.samples.map((id) => holds(id, process.env.WINDOW));
  const from = inside.indexOf(true);
  const to = inside.lastIndexOf(true);
  profile.samples = profile.samples.slice(from, to + 1);
  dt = dt.slice(from, to + 1);
}
profile.samples.forEach((id, i) => {
  const node = byId.get(id);
  const { functionName, url, lineNumber } = node.callFrame;
  const key = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

// Self time by package / area, excluding idle.
const areas = new Map();
profile.samples.forEach((id, i) => {
  const { url, functionName } = byId.get(id).callFrame;
  let area = 'other';
  if (functionName === '(idle)') return;
  if (functionName === '(garbage collector)') area = 'GC';
  else if (/ioredis/.test(url)) area = 'ioredis';
  else if (/@nestjs/.test(url)) area = 'nest';
  else if (/prom-client/.test(url)) area = 'prom-client';
  else if (/threadmill\/dist/.test(url)) area = 'threadmill: ' + url.split('/dist/')[1].split('/')[0];
  else if (/benchmarks/.test(url)) area = 'bench harness';
  else if (url.startsWith('node:') || url === '') area = `node ${functionName === '' ? '' : ''}(internals/native)`;
  areas.set(area, (areas.get(area) ?? 0) + (dt[i] ?? 0));
});
const busy = [...areas.values()].reduce((a, b) => a + b, 0);
console.log('\nbusy time by area:');
for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1]))
  console.log(`${((us / busy) * 100).toFixed(1).padStart(5)}%  ${area}`);
