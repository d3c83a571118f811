import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DecodeCrashGuard } from './decodeCrashGuard';

const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((c) => c.repeat(64)) as [string, string, string, string];
const host = os.hostname();

describe('images whose decoding killed a worker', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'decode-guard-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const dead = new Set([999_991, 999_992]);
  const alive = (pid: number) => !dead.has(pid);

  it('counts, per image, the deaths of this host\'s processes it was being decoded in, once each, and leaves the living and other hosts\' logs alone', async () => {
    // Died decoding A (B was over); a live worker decoding C; a dead process on another host decoding A.
    fs.writeFileSync(path.join(dir, `${host}-999991-0000abcd.log`), `S ${A}\nS ${B}\nE ${B}\nS ${A}\n`);
    fs.writeFileSync(path.join(dir, `${host}-12345-0000abcd.log`), `S ${C}\n`);
    fs.writeFileSync(path.join(dir, `elsewhere-999992-0000abcd.log`), `S ${A}\n`);
    const first = new DecodeCrashGuard(dir, alive);
    expect([first.deathsDuring(A), first.deathsDuring(B), first.deathsDuring(C)]).toEqual([1, 0, 0]);
    expect(fs.existsSync(path.join(dir, `${host}-999991-0000abcd.log`))).toBe(false);
    expect(fs.existsSync(path.join(dir, `${host}-12345-0000abcd.log`))).toBe(true);
    expect(fs.existsSync(path.join(dir, `elsewhere-999992-0000abcd.log`))).toBe(true);

    // A second death during A, claimed by another worker starting: the first learns of it too.
    fs.writeFileSync(path.join(dir, `${host}-999992-0000abce.log`), `S ${A}\nS ${D}\nE ${D}`);
    const second = new DecodeCrashGuard(dir, alive);
    expect(second.deathsDuring(A)).toBe(2);
    expect(first.deathsDuring(A)).toBe(2);
    expect(second.deathsDuring(D)).toBe(0);
    first.close();
    second.close();
  });

  it('makes no directory before its first image, and leaves none when closed after a crawl that met no crash', async () => {
    const sub = path.join(dir, 'decoding');
    const guard = new DecodeCrashGuard(sub, alive);
    expect(fs.existsSync(sub)).toBe(false);
    await guard.decoding(A, async () => { expect(fs.readdirSync(sub)).toHaveLength(1); });
    guard.close();
    expect(fs.existsSync(sub)).toBe(false);
  });

  it('marks an image as being decoded until its decoding is over, failed or not, and leaves no log when closed', async () => {
    const guard = new DecodeCrashGuard(dir, alive);
    const own = () => fs.readdirSync(dir).filter((n) => n.startsWith(`${host}-${process.pid}-`));
    const read = () => fs.readFileSync(path.join(dir, own()[0]!), 'utf8');
    await guard.decoding(A, async () => { expect(read()).toBe(`S ${A}\n`); });
    await expect(guard.decoding(B, async () => { throw new Error('unreadable'); })).rejects.toThrow('unreadable');
    expect(read()).toBe(`S ${A}\nE ${A}\nS ${B}\nE ${B}\n`);
    // A process that died with that log: nothing was left open, so nothing is counted.
    const left = own()[0]!;
    fs.copyFileSync(path.join(dir, left), path.join(dir, `${host}-999991-0000beef.log`));
    expect(new DecodeCrashGuard(dir, alive).deathsDuring(A)).toBe(0);
    guard.close();
    expect(fs.existsSync(path.join(dir, left))).toBe(false);
  });
});
