/** One line for operators: the store's error without stack or request details. */
export function describeStoreError(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string };
  const text = [e.code ?? (e.name && e.name !== 'Error' ? e.name : undefined), e.message].filter(Boolean).join(': ') || String(err);
  return text.replace(/\s+/g, ' ').slice(0, 200);
}
