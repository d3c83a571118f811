import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface OriginArrival { atMs: number; host: string; path: string }

export interface OriginProcess {
  port: number;
  /** Stops the site and resolves with what it saw (when it was given a log file). */
  stop(): Promise<OriginArrival[]>;
}

/**
 * The compiled site script. Under jest this module runs from its TypeScript source, which node
 * cannot run as a child: the build's copy is used then (the tests that need it build first).
 */
function originScript(): string {
  const compiled = path.join(__dirname, 'originProcess.js');
  if (fs.existsSync(compiled)) return compiled;
  const built = path.resolve(__dirname, '..', '..', 'dist', 'src', 'demo', 'originProcess.js');
  if (!fs.existsSync(built)) throw new Error(`${built} is missing: build first (npm run build)`);
  return built;
}

/**
 * Starts src/demo/originProcess in a child process serving DIR on every one of HOSTS (one port
 * for all) and resolves once it listens.
 */
export async function startOriginProcess(dir: string, hosts: string[], logFile?: string): Promise<OriginProcess> {
  const args = [originScript(), dir, hosts.join(','), '0', ...(logFile ? [logFile] : [])];
  // stdin stays open as long as we live: the origin exits when it closes (see originProcess).
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`origin process exited with ${code}`)));
  });
  child.removeAllListeners('exit');
  return {
    port,
    stop: () => new Promise<OriginArrival[]>((resolve) => {
      child.once('exit', () => {
        const text = logFile && fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
        resolve(text.split('\n').filter(Boolean).map((l) => {
          const [at, host, p] = l.split(' ');
          return { atMs: Number(at), host: host!, path: p! };
        }));
      });
      child.kill('SIGTERM');
    }),
  };
}
