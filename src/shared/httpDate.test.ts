import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { transformSync } from '@swc/core';
import { parseHttpDate } from './httpDate';

const AT = Date.parse('2026-11-21T12:02:30Z');

describe('HTTP dates', () => {
  it('reads the three forms RFC 9110 asks a recipient to accept, and nothing else', () => {
    expect(parseHttpDate('Sat, 21 Nov 2026 12:02:30 GMT')).toBe(AT);
    expect(parseHttpDate('Saturday, 21-Nov-26 12:02:30 GMT')).toBe(AT);
    expect(parseHttpDate('Sat Nov 21 12:02:30 2026')).toBe(AT);
    for (const no of ['2026', '12/01/2024', '2026-11-21T12:02:30Z', 'Sat, 31 Feb 2026 12:00:00 GMT', 'soon']) expect(parseHttpDate(no)).toBeUndefined();
  });

  // A worker's zone cannot be changed inside a jest test (its process.env is a copy): the module
  // runs in a node of its own, in Berlin.
  it('reads asctime as GMT on a worker outside UTC, where Date.parse reads local time', () => {
    const { code } = transformSync(fs.readFileSync(path.join(__dirname, 'httpDate.ts'), 'utf8'), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' },
    });
    const script = `${code}\nconsole.log(JSON.stringify([parseHttpDate('Sat Nov 21 12:02:30 2026'), Date.parse('Sat Nov 21 12:02:30 2026')]))`;
    const [ours, dateParse] = JSON.parse(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, TZ: 'Europe/Berlin' }, encoding: 'utf8' })) as number[];
    expect(dateParse).toBe(AT - 3_600_000);
    expect(ours).toBe(AT);
  });
});
