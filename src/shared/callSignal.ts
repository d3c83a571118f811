/**
 * The signal for one client call with a time limit: aborted after `timeoutMs`, or when `outer`
 * aborts (Ctrl-C). `done()` must be called when the call ends: it clears the timer and the
 * listener on `outer`, after which nothing holds the signal.
 *
 * Not `AbortSignal.timeout` or `AbortSignal.any`: on Node 20 a timeout or composite signal with
 * an abort listener is kept in a process-wide set until it aborts, and a composite holds its
 * sources only weakly, so its timeout can be collected before it fires. The Temporal client's
 * gRPC call leaves its abort listener on the signal, so every status query of `crawl run`
 * stayed in memory with its call (~0.2 MB/s of heap, for good; nodejs/node#54614, #55351).
 */
export function callSignal(timeoutMs: number, outer?: AbortSignal): { signal: AbortSignal; timedOut(): boolean; done(): void } {
  const controller = new AbortController();
  let timedOut = false;
  const onOuter = () => controller.abort(outer!.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    done: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}
