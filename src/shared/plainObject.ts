/** A JSON object: not null, not an array (both of which typeof calls 'object'). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
