import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
export const CLI = path.join(ROOT, 'bin', 'crawl');

export interface Ended { code: number | null; stdout: string; stderr: string }

/** A command with the test's environment plus `env`, its output collected: the process, and its end. */
export function started(command: string, args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; done: Promise<Ended> } {
  const child = spawn(command, args, { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => { stdout += d; });
  child.stderr!.on('data', (d) => { stderr += d; });
  const done = new Promise<Ended>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

/** `bin/crawl ARGS` to its end (the build in dist/, as a user runs it). */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ended> {
  return started(process.execPath, [CLI, ...args], env).done;
}
