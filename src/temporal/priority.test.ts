import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { helperNiceFromEnv, keepHelperThreadsBelowMain, lowerPriority, serverNiceFromEnv } from './priority';

describe('lowerPriority', () => {
  it('lowers every thread of a running process, and never raises one', async () => {
    // A node child has several threads from the start (V8 platform, libuv).
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const changed = lowerPriority(child.pid!, 7);
      expect(changed).toBeGreaterThan(0);
      expect(os.getPriority(child.pid!)).toBe(7);
      if (fs.existsSync(`/proc/${child.pid}/task`)) {
        const threads = fs.readdirSync(`/proc/${child.pid}/task`).map(Number);
        expect(threads.length).toBeGreaterThan(1);
        expect(threads.map((t) => os.getPriority(t))).toEqual(threads.map(() => 7));
      }
      lowerPriority(child.pid!, 3);
      expect(os.getPriority(child.pid!)).toBe(7);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it.each([
    ['CRAWL_SERVER_NICE', serverNiceFromEnv, 10],
    ['CRAWL_HELPER_NICE', helperNiceFromEnv, 5],
  ] as const)('reads %s (0 = off) and refuses nonsense', (name, read, fallback) => {
    const saved = process.env[name];
    try {
      delete process.env[name];
      expect(read()).toBe(fallback);
      process.env[name] = '0';
      expect(read()).toBe(0);
      for (const bad of ['high', '25', '-1']) {
        process.env[name] = bad;
        expect(() => read()).toThrow(new RegExp(`${name} must be an integer from 0 to 19`));
      }
    } finally {
      if (saved === undefined) delete process.env[name];
      else process.env[name] = saved;
    }
  });

  it('keeps every thread of this process but the main one at the helper nice value', () => {
    const mainBefore = os.getPriority(process.pid);
    keepHelperThreadsBelowMain(mainBefore + 4);
    const helpers = fs.readdirSync('/proc/self/task').map(Number).filter((t) => t !== process.pid);
    expect(helpers.length).toBeGreaterThan(0);
    expect(helpers.map((t) => os.getPriority(t) >= mainBefore + 4)).toEqual(helpers.map(() => true));
    expect(os.getPriority(process.pid)).toBe(mainBefore);
  });
});
