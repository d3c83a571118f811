/** An error's code (`ECONNREFUSED`, `UND_ERR_CONNECT_TIMEOUT`), or its cause's: undici wraps some errors. */
export function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * An error's message followed by its causes' that it does not already hold. The Temporal SDK's
 * errors say only which call failed ("Failed to signalWithStart Workflow"); the server's reason
 * ("Namespace default has no mapping defined for search attribute CrawlState") is in the cause.
 */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    // Not instanceof Error: errors from another realm (Node's own under jest's VM) are not.
    const message = typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string' ? (e as Error).message : String(e);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(': ');
}
