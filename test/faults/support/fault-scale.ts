/**
 * The fault suite runs short in `npm test` (CI) and at full size in
 * `npm run test:faults`, which also writes docs/reliability.md.
 */
export const FULL = process.env['FAULTS_SCALE'] === 'full';

/** `short` in CI, `full` under `npm run test:faults`. */
export const scale = <T>(short: T, full: T): T => (FULL ? full : short);

/** Time budget of one scenario. */
export const SCENARIO_TIMEOUT_MS = FULL ? 900_000 : 120_000;
