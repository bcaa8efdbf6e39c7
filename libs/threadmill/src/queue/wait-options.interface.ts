/** Options of `TaskQueue.waitFor`. */
export interface WaitOptions {
  /**
   * Give up after this many ms (an integer, at most 2^31 - 1) with a
   * `WaitTimeoutError`; the run is untouched.
   * @defaultValue no limit: wait until the run settles
   */
  timeoutMs?: number;
  /**
   * Stop waiting when this signal aborts: the call rejects with the signal's
   * reason and the run is untouched (an HTTP request that closed, an RxJS
   * unsubscribe).
   */
  signal?: AbortSignal;
  /**
   * Told each progress value a running attempt of the run reports
   * (`context.progress(value)`), in order, while this call waits. Values
   * reported before the call registered are not replayed: read `progress`
   * of `getResult` for the latest. A listener that throws is logged and
   * ignored.
   */
  onProgress?: (value: unknown) => void;
  /** Told each line a running attempt of the run logs (`context.log(line)`), in order, while this call waits. */
  onLog?: (line: string) => void;
}
