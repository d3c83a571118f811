/** One line for operators: the store's error without stack or request details. */
export function describeStoreError(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string };
  // The S3 client's own timeouts, said plainly: its messages named the HTTP library and ran past
  // what `crawl status` shows of a note ("TimeoutError: @smithy/node-http-handler - the request
  // socket did not establish a connection with the server within the configured ti").
  const connect = /did not establish a connection with the server within the configured timeout of (\d+) ms/.exec(e.message ?? '');
  if (connect) return `no connection to the store within ${seconds(connect[1]!)} (TimeoutError)`;
  const request = /a request has exceeded the configured (\d+) ms requestTimeout/.exec(e.message ?? '');
  if (request) return `the store did not answer within ${seconds(request[1]!)} (${e.code ?? 'TimeoutError'})`;
  const label = e.code ?? (e.name && e.name !== 'Error' ? e.name : undefined);
  // Node's own messages already start with their code ("ENOSPC: no space left on device, write").
  const text = (label && !e.message?.startsWith(label) ? [label, e.message] : [e.message ?? label]).filter(Boolean).join(': ') || String(err);
  return text.replace(/\s+/g, ' ').slice(0, 200);
}

function seconds(ms: string): string {
  return `${Math.round(Number(ms) / 100) / 10} s`;
}
