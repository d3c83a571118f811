import type { MonitoringUpdate } from './status';
import { durationText } from '../workflows/timeLeft';

const BAR_WIDTH = 25;
const NARROWEST_BAR = 5;

/**
 * The progress bar's line, within the terminal's width: a longer line wraps, and the carriage
 * return of the next update goes back only to the start of its last row, so every update left
 * a row behind (the full line was ~110 characters, on terminals of 80). The bar narrows first,
 * then goes, then the line is cut.
 */
export function progressBarLine(g: MonitoringUpdate['global'], columns?: number): string {
  const pct = g.totalUrls ? Math.floor((g.finishedUrls / g.totalUrls) * 100) : 100;
  const text = `${pct}% ${g.finishedUrls}/${g.totalUrls} urls, ${g.done} done, ${counted(g.errors, 'error', 'errors')}${g.retries ? ` (${counted(g.retries, 'retry', 'retries')})` : ''}, ${g.ratePerS}/s, ${g.running} running` +
    `${g.waiting ? ` (${g.waiting} waiting)` : ''}${g.paused ? ` (${g.paused} paused)` : ''}${g.halted ? `, ${g.halted} halted` : ''}` +
    `${g.secondsLeft ? `, ~${durationText(g.secondsLeft)} left` : ''}`;
  const width = Math.min(BAR_WIDTH, roomOn(columns) - text.length - 3);
  if (width >= NARROWEST_BAR) return `[${'#'.repeat(Math.floor((pct * width) / 100)).padEnd(width, '.')}] ${text}`;
  return fitLine(text, columns);
}

const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** A line rewritten in place (`\r`) on a terminal this wide, cut to fit: a wrapped one leaves a row behind at each rewrite. */
export function fitLine(text: string, columns?: number): string {
  const room = roomOn(columns);
  return text.length <= room ? text : `${text.slice(0, Math.max(0, room - 1))}…`;
}

/** The last column is left free: a line that fills it wraps on some terminals. */
export function roomOn(columns?: number): number {
  return columns && columns > 1 ? columns - 1 : Infinity;
}
