/** A decimal number as people write one: digits, a point, an exponent; spaces around allowed. */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;

/**
 * The number a setting or argument says, NaN when it is not a decimal number. `Number()` alone
 * also reads `0x10` as 16, `0b11` as 3, `Infinity`, and an empty or blank text as 0: `crawl
 * set-rate SOURCE 0x10` set 16 requests/s where a typo was meant, and `--rate ' '` read as 0.
 */
export function decimal(text: string): number {
  return DECIMAL.test(text) ? Number(text) : NaN;
}
