import { StringDecoder } from 'node:string_decoder';

/**
 * Lines of a byte stream (UTF-8), each at most `maxChars` long. readline keeps a whole line in
 * memory however long it is, so one manifest "line" of gigabytes (a JSON array on one line, a
 * binary file given by mistake) would exhaust memory; here an over-long line is skipped as it
 * streams past, reported with its length and first characters, and the lines after it are read
 * as usual.
 */
export type Line = { line: number; text: string } | { line: number; tooLong: { chars: number; head: string } };

const HEAD_CHARS = 40;

/** Yields the lines each chunk completes, as one array: an await per line costs more than the line. */
export async function* readLines(input: AsyncIterable<Buffer>, maxChars: number): AsyncGenerator<Line[]> {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let over = false; // the line read now is too long: its characters are counted, not kept
  let skipped = 0;
  let head = '';
  let line = 0;
  const finish = (rest: string): Line => {
    line++;
    const done: Line = over
      ? { line, tooLong: { chars: skipped + rest.length, head } }
      : { line, text: partial + rest };
    partial = '';
    over = false;
    skipped = 0;
    head = '';
    return done;
  };
  /** Starts skipping the current line once `more` characters would take it over the limit. */
  const overflows = (more: string): boolean => {
    if (!over && partial.length + more.length > maxChars) {
      over = true;
      head = (partial + more.slice(0, HEAD_CHARS)).slice(0, HEAD_CHARS);
      skipped = partial.length;
      partial = '';
    }
    return over;
  };
  const take = (text: string): Line[] => {
    const lines: Line[] = [];
    let start = 0;
    for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', start)) {
      const rest = text.slice(start, newline);
      overflows(rest);
      lines.push(finish(rest));
      start = newline + 1;
    }
    const tail = text.slice(start);
    if (overflows(tail)) skipped += tail.length;
    else partial += tail;
    return lines;
  };
  for await (const chunk of input) {
    const lines = take(decoder.write(chunk));
    if (lines.length > 0) yield lines;
  }
  const last = take(decoder.end());
  if (partial.length > 0 || over) last.push(finish(''));
  if (last.length > 0) yield last;
}
