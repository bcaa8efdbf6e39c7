import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Runs one full garbage collection. A worker process calls it once, after it
 * booted and before it claims its first run.
 *
 * Booting leaves megabytes of objects in V8's young generation: loaded
 * modules and the Nest container, which live on, and the leftovers of the
 * boot itself. The first scavenges under load would copy all of it, then
 * promote it, while claimed runs wait. Collecting it up front, where nobody
 * waits, made a short drain faster and cheaper in worker CPU per run (see
 * docs/optimisations.md, step 31).
 *
 * Node offers no collector call without `--expose-gc`. As Jest's leak
 * detector does, the flag is set just long enough for a fresh context to get
 * `gc`, then cleared, so no other code sees a `gc` global.
 */
export function collectBootGarbage(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return exposed();
  setFlagsFromString('--expose-gc');
  try {
    (runInNewContext('gc') as () => void)();
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
