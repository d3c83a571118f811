import { decimal } from './decimal';

describe('decimal', () => {
  it('reads numbers as people write them', () => {
    expect(decimal('16')).toBe(16);
    expect(decimal(' 0.5 ')).toBe(0.5);
    expect(decimal('.25')).toBe(0.25);
    expect(decimal('2.')).toBe(2);
    expect(decimal('-3')).toBe(-3);
    expect(decimal('1e3')).toBe(1000);
    expect(decimal('1.5E-2')).toBe(0.015);
  });

  it('reads nothing else: hex, binary and octal literals, Infinity, blanks, separators', () => {
    for (const text of ['0x10', '0b11', '0o7', 'Infinity', '-Infinity', '', '   ', '1_000', '1,5', '5/s', 'NaN', '.', 'e3']) {
      expect(decimal(text)).toBeNaN();
    }
  });
});
