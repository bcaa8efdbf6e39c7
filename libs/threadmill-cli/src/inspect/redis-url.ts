import { maskUrl } from '@threadmill/nestjs';

/** The schemes the library connects with (its `connection` option). */
const REDIS_URL = /^(redis|rediss|unix):\/\/./;

/**
 * Why `url` cannot be connected to, naming `source` (the flag or variable
 * that gave it) and quoting it with its credentials masked; `undefined` when
 * it can.
 */
export function redisUrlProblem(url: string, source: '--redis' | 'REDIS_URL'): string | undefined {
  if (REDIS_URL.test(url)) return undefined;
  return `${source} must be a redis://, rediss:// or unix:// URL, got "${maskUrl(url)}".`;
}

/**
 * Masks URL credentials in this process's arguments: `process.argv`, and the
 * command line that any user of the machine can read (`ps`,
 * `/proc/<pid>/cmdline`), which Node overwrites when `process.title` is set.
 * Until this runs they show as typed: `REDIS_URL` keeps a password out of
 * them altogether.
 */
export function hideCredentialsFromProcessList(): void {
  const masked = process.argv.map(maskUrl);
  if (masked.every((argument, i) => argument === process.argv[i])) return;
  process.argv.splice(0, process.argv.length, ...masked);
  // Node writes the title over the whole original command line (cut to its length).
  process.title = [process.argv0, ...masked.slice(1)].join(' ');
}
