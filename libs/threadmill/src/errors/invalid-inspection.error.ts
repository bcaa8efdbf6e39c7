import { ThreadmillError } from './threadmill.error.js';

/** A telemetry API call names something that cannot exist (a bad queue name or segment). */
export class InvalidInspectionError extends ThreadmillError {
  constructor(readonly problem: string) {
    super(`Cannot inspect: ${problem}`);
  }
}
