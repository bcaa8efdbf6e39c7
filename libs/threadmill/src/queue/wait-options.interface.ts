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
}
