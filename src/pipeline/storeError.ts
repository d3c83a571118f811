/** One line for operators: the store's error without stack or request details. */
export function describeStoreError(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string };
  const label = e.code ?? (e.name && e.name !== 'Error' ? e.name : undefined);
  // Node's own messages already start with their code ("ENOSPC: no space left on device, write").
  const text = (label && !e.message?.startsWith(label) ? [label, e.message] : [e.message ?? label]).filter(Boolean).join(': ') || String(err);
  return text.replace(/\s+/g, ' ').slice(0, 200);
}
