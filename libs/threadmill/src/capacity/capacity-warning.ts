import type { CapacityReport } from './capacity-report.js';

/** Bytes for people: `20.0 MB`, `1.5 GB` (powers of 1024, as Redis's `used_memory_human`). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A share of maxmemory, `81%`. */
const percent = (bytes: number, max: number) => `${Math.round((bytes / max) * 100)}%`;

/** A TTL in ms with its size in hours or days, `86400000 ms (24.0 h)`. */
function describeTtl(ms: number): string {
  const hours = ms / 3_600_000;
  return `${ms} ms (${hours >= 48 ? `${(hours / 24).toFixed(1)} days` : `${hours.toFixed(1)} h`})`;
}

/**
 * The warning for a report whose figures reached the threshold, else null:
 * it names what crossed, the figures behind the projection and the settings
 * that change them.
 */
export function capacityWarning(report: Omit<CapacityReport, 'warning'>): string | null {
  const { usedBytes, maxBytes, projectedBytes, over } = report;
  if (maxBytes === null || usedBytes === null || projectedBytes === null || (!over.used && !over.projected))
    return null;
  const { finishedPerSecond: rate, resultTtlMs: ttl, warningRatio } = report;
  const what = over.used
    ? `Redis memory in use has reached ${percent(usedBytes, maxBytes)} of maxmemory`
    : `Redis memory projected for kept results reaches ${percent(projectedBytes, maxBytes)} of maxmemory`;
  const ttls =
    ttl.successful === ttl.failed
      ? `resultTtlMs ${describeTtl(ttl.successful)}`
      : `resultTtlMs ${describeTtl(ttl.successful)} for successful runs, ${describeTtl(ttl.failed)} for failed ones`;
  return (
    `${what} (memoryWarningRatio ${warningRatio}): used ${formatBytes(usedBytes)} of maxmemory ` +
    `${formatBytes(maxBytes)}, projected ${formatBytes(projectedBytes)} = used + ` +
    `(${(rate.successful + rate.failed).toFixed(1)} kept runs/s: ${rate.successful.toFixed(1)} successful, ` +
    `${rate.failed.toFixed(1)} failed) × ${ttls} × ${formatBytes(report.bytesPerRun)} per run ` +
    `(${report.bytesPerRunSource}), less the ${report.kept.successful + report.kept.failed} kept now. ` +
    'A full Redis refuses enqueues (RedisOutOfMemoryError). Lower resultTtlMs, raise maxmemory, or purge queues ' +
    'whose runs are no longer needed (TaskInspector.purge, the dashboard).'
  );
}
