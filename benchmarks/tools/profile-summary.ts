/**
 * Summarises a V8 `.cpuprofile`: self time per function, the top N as a share of the profile, then busy time by area.
 *
 * Run: `[WINDOW=<function name>] node dist/benchmarks/tools/profile-summary.js <file.cpuprofile> [N=30]` after
 * `npm run build`.
 *
 * For profiles from `node --cpu-prof` (of `profile-enqueue`, say);
 * `profile-drain` prints this summary of its worker itself. WINDOW keeps
 * only the samples from the first to the last whose stack holds that
 * function (WINDOW=record: a drain, without the process's boot and shutdown).
 */
import { readFileSync } from 'node:fs';
import { summariseCpuProfile, type CpuProfile } from '../lib/profile-summaries.js';

const [file, top = '30'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node dist/benchmarks/tools/profile-summary.js <file.cpuprofile> [N]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
console.log(summariseCpuProfile(profile, Number(top), process.env['WINDOW']));
