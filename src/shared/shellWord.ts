/** A word as a POSIX shell reads it back unchanged: quoted only when it needs to be. */
export function shellWord(s: string): string {
  return /^[\w./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
