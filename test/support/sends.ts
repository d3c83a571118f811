import diagnosticsChannel from 'node:diagnostics_channel';

/**
 * When each request left this process, as undici writes it to the socket. Tests of request
 * spacing read these rather than arrival times at an origin in the same process: those move with
 * this event loop, and on a loaded CI machine two requests sent 30 ms apart were handled 5 ms
 * apart.
 */
export async function recordingSends<T>(work: () => Promise<T>): Promise<{ value: T; sends: { atMs: number; path: string }[] }> {
  const sends: { atMs: number; path: string }[] = [];
  const onSend = (msg: unknown) => { sends.push({ atMs: Date.now(), path: String((msg as { request: { path: string } }).request.path) }); };
  diagnosticsChannel.subscribe('undici:client:sendHeaders', onSend);
  try {
    return { value: await work(), sends };
  } finally {
    diagnosticsChannel.unsubscribe('undici:client:sendHeaders', onSend);
  }
}
