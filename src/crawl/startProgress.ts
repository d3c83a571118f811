import path from 'node:path';
import { fitLine, roomOn } from './progressBar';

/** How far a start has come: manifest lines read, then monitors started (`sources` once reading has ended). */
export interface StartProgress {
  linesRead: number;
  sourcesStarted: number;
  sources: number | null;
}

/** A start quicker than this (a few sources) shows no progress. */
const QUIET_MS = 1_000;

/**
 * Shows a start's progress before a crawl's own progress can: starting 3,000 sources took 65-77 s
 * (each a chunk write and a signal-with-start, while the first monitors already crawl), and
 * `crawl run` printed nothing in that time but the server's start. From 1 s on: on a terminal
 * one line, rewritten at most 4 times a second and cleared at the end; in a log a
 * `start_progress` JSON line every 5 s.
 */
export class StartProgressLine {
  private lastMs = -Infinity;
  private shown = false;
  private readonly fromMs: number;

  constructor(
    private readonly out: { write(text: string): unknown; isTTY?: boolean; columns?: number },
    private readonly manifest: string,
    private readonly now: () => number = Date.now,
  ) {
    this.fromMs = now() + QUIET_MS;
  }

  update(p: StartProgress): void {
    const t = this.now();
    if (t < this.fromMs || t - this.lastMs < (this.out.isTTY ? 250 : 5_000)) return;
    this.lastMs = t;
    if (this.out.isTTY) {
      this.out.write(`\r\x1b[K${fittedText(p, this.manifest, this.out.columns)}`);
      this.shown = true;
    } else {
      this.out.write(`${JSON.stringify({ event: 'start_progress', time: new Date(t).toISOString(), ...p })}\n`);
    }
  }

  /** Clears the terminal line for what comes next. */
  done(): void {
    if (this.shown) this.out.write('\r\x1b[K');
    this.shown = false;
  }
}

export function startProgressText(p: StartProgress, manifest: string): string {
  return p.sources === null
    ? `reading ${manifest}: ${p.linesRead.toLocaleString('en-US')} lines`
    : `starting monitors: ${p.sourcesStarted.toLocaleString('en-US')} of ${p.sources.toLocaleString('en-US')} sources`;
}

/** The line within the terminal's width: a long manifest path shortened to its name, then to the name's end, before the count is cut. */
function fittedText(p: StartProgress, manifest: string, columns?: number): string {
  const room = roomOn(columns);
  const full = startProgressText(p, manifest);
  if (full.length <= room) return full;
  const name = path.basename(manifest);
  const short = startProgressText(p, name);
  const over = short.length - room;
  if (over <= 0) return short;
  // The name's end after an ellipsis, while 3 or more of its characters are left.
  return name.length - over - 1 >= 3 ? startProgressText(p, `…${name.slice(over + 1)}`) : fitLine(short, columns);
}
