/**
 * CSV records from lines: a quoted cell may hold line breaks (RFC 4180), as spreadsheets and
 * database exports write a notes or caption column. Read line by line, each continuation line
 * was a bad line of its own ("missing url") and the record's cells after the break were lost.
 *
 * A record is joined only when it reads as one: a quote left open by mistake (`"x.jpg`)
 * would otherwise take the lines after it into one cell, and their URLs with it. So a joined
 * record is kept only when `accept` finds its URL where it belongs (no line break in it, no
 * more cells than the header has); otherwise its first line is read alone, as before, and the
 * lines after it are read afresh.
 */
export interface CsvLine {
  line: number;
  text: string;
}

/** The most lines one record may span: a caption of a few paragraphs, not a file. */
export const MAX_RECORD_LINES = 100;

export class CsvRecords {
  private held: CsvLine[] = [];
  private heldChars = 0;

  /**
   * `open(text)`: whether a quoted cell is still open at the end of `text`; `accept(record)`:
   * whether a joined record reads as one; `maxChars`: its longest.
   */
  constructor(
    private readonly open: (text: string) => boolean,
    private readonly accept: (record: string) => boolean,
    private readonly maxChars: number,
  ) {}

  /** Whether lines are held for a record not yet closed: blank and `#` lines are its text then. */
  get holding(): boolean {
    return this.held.length > 0;
  }

  /** The records this line completes, each named by the line it starts on. */
  push(line: CsvLine): CsvLine[] {
    const out: CsvLine[] = [];
    this.take(line, out);
    return out;
  }

  /** At the end of the file: a record still open is read line by line. */
  end(): CsvLine[] {
    const out: CsvLine[] = [];
    while (this.held.length > 0) this.giveUp(out);
    return out;
  }

  private take(line: CsvLine, out: CsvLine[]): void {
    if (this.held.length === 0) {
      // Outside a record a blank or `#` line is none, as the manifest reader skips it: such lines
      // come here only when a record given up is read afresh.
      if (line.text === '' || line.text.startsWith('#')) return;
      if (this.open(line.text)) this.hold(line);
      else out.push(line);
      return;
    }
    this.hold(line);
    const text = this.held.map((l) => l.text).join('\n');
    if (!this.open(text)) {
      if (this.accept(text)) {
        out.push({ line: this.held[0]!.line, text });
        this.held = [];
        this.heldChars = 0;
      } else this.giveUp(out);
    } else if (this.held.length >= MAX_RECORD_LINES || this.heldChars > this.maxChars) this.giveUp(out);
  }

  private hold(line: CsvLine): void {
    this.held.push(line);
    this.heldChars += line.text.length + 1;
  }

  /** The first held line alone, as a line-by-line reader read it; the rest are taken afresh. */
  private giveUp(out: CsvLine[]): void {
    const [first, ...rest] = this.held;
    this.held = [];
    this.heldChars = 0;
    out.push(first!);
    for (const l of rest) this.take(l, out);
  }
}
