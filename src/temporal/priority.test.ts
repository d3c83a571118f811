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

  it('reads CRAWL_SERVER_NICE and refuses nonsense', () => {
    const saved = process.env.CRAWL_SERVER_NICE;
    try {
      delete process.env.CRAWL_SERVER_NICE;
      expect(serverNiceFromEnv()).toBe(10);
      process.env.CRAWL_SERVER_NICE = '0';
      expect(serverNiceFromEnv()).toBe(0);
      process.env.CRAWL_SERVER_NICE = 'high';
      expect(() => serverNiceFromEnv()).toThrow(/CRAWL_SERVER_NICE must be an integer from 0 to 19/);
    } finally {
      if (saved === undefined) delete process.env.CRAWL_SERVER_NICE;
      else process.env.CRAWL_SERVER_NICE = saved;
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

  it('reads CRAWL_HELPER_NICE (default 5, 0 = off) and refuses nonsense', () => {
    const saved = process.env.CRAWL_HELPER_NICE;
    try {
      delete process.env.CRAWL_HELPER_NICE;
      expect(helperNiceFromEnv()).toBe(5);
      process.env.CRAWL_HELPER_NICE = '0';
      expect(helperNiceFromEnv()).toBe(0);
      process.env.CRAWL_HELPER_NICE = '25';
      expect(() => helperNiceFromEnv()).toThrow(/CRAWL_HELPER_NICE must be an integer from 0 to 19/);
    } finally {
      if (saved === undefined) delete process.env.CRAWL_HELPER_NICE;
      else process.env.CRAWL_HELPER_NICE = saved;
    }
  });
});
