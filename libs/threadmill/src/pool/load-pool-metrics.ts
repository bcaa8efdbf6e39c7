import { ThreadmillError } from '../errors/threadmill.error.js';

type PoolMetricsModule = typeof import('../metrics/pool-metrics.js') & typeof import('../metrics/member-metrics.js');

/**
 * Loads the pool's metrics code, only when `--metrics-port` asks for it:
 * `prom-client` is an optional dependency, and a pool without metrics must
 * not need it.
 * @throws ThreadmillError naming the missing package
 */
export async function loadPoolMetrics(): Promise<PoolMetricsModule> {
  try {
    const [pool, member] = await Promise.all([
      import('../metrics/pool-metrics.js'),
      import('../metrics/member-metrics.js'),
    ]);
    return { ...pool, ...member };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && /prom-client/.test(String(error))) {
      throw new ThreadmillError(
        '--metrics-port needs the prom-client package: run `npm install prom-client`, or drop --metrics-port.',
      );
    }
    throw error;
  }
}
