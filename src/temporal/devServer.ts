import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { log } from '../shared/log';
import { lowerPriority, serverNiceFromEnv } from './priority';
import { ALL_SEARCH_ATTRIBUTES } from './searchAttributes';
import { resolveTool, SETUP_COMMAND } from './tools';

export interface DevServerOptions {
  dataDir: string;
  port?: number;
  uiPort?: number;
  ip?: string;
}

export interface RunningServer {
  address: string;
  /** Web UI address, when this process started the server. */
  uiUrl?: string;
  /** True when this process owns the server and stop() ends it. */
  owned: boolean;
  stop(): Promise<void>;
}

/** Whether something accepts TCP connections at host:port. */
export function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
    socket.setTimeout(1000, () => { socket.destroy(); resolve(false); });
  });
}

/** A TCP port that is free on 127.0.0.1 right now (for servers started by tests and benches). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForFrontend(address: string, child: ChildProcess | undefined, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(`temporal server start-dev exited with code ${child.exitCode} before it was ready`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`Temporal server at ${address} not ready after ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * The embedded default: when TEMPORAL_ADDRESS is set, nothing is started and that server is used.
 * Otherwise a server already listening on the port is reused (an operator's `crawl dev-server`),
 * or the pinned `temporal server start-dev` is started with SQLite under dataDir.
 */
export async function ensureTemporalServer(opts: DevServerOptions): Promise<RunningServer> {
  const external = process.env.TEMPORAL_ADDRESS;
  if (external) {
    log.info({ event: 'temporal.external', address: external }, 'using TEMPORAL_ADDRESS');
    return { address: external, owned: false, stop: async () => undefined };
  }
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? port + 1000;
  const address = `${ip}:${port}`;
  if (await portOpen(ip, port)) {
    await waitForFrontend(address, undefined, 10_000);
    log.info({ event: 'temporal.reuse', address }, 'a Temporal server is already listening; using it');
    return { address, owned: false, stop: async () => undefined };
  }
  const nice = serverNiceFromEnv();
  const bin = resolveTool('temporal');
  if (!bin) throw new Error(`No Temporal CLI binary; run ${SETUP_COMMAND}`);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const dbFile = path.join(opts.dataDir, 'temporal.sqlite');
  const args = [
    'server', 'start-dev',
    '--ip', ip, '--port', String(port), '--ui-port', String(uiPort),
    '--db-filename', dbFile,
    // Write-ahead log without a sync per commit: a crash of the server (or of the machine's
    // processes) loses nothing committed; a power cut may roll back the last moments, which
    // the crawl absorbs (activities retry, records are rewritten by unit, never duplicated).
    // The default rollback journal syncs several times per transaction and made the server
    // the bottleneck with 200 sources.
    '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=NORMAL',
    '--ui-disable-news-fetch',
    '--log-format', 'json', '--log-level', 'warn',
    ...ALL_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=${searchAttributeCliType(k.type)}`]),
  ];
  const serverLog = fs.openSync(path.join(opts.dataDir, 'temporal-server.log'), 'a');
  const child = spawn(bin, args, { stdio: ['ignore', serverLog, serverLog], detached: false });
  fs.closeSync(serverLog);
  log.info({ event: 'temporal.start', address, ui: `http://${ip}:${uiPort}`, db: dbFile }, 'starting embedded Temporal server');
  try {
    await waitForFrontend(address, child, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const threads = child.pid ? lowerPriority(child.pid, nice) : 0;
  if (threads) log.info({ event: 'temporal.priority', nice, threads }, 'embedded Temporal server runs below the crawler\'s CPU priority');
  return {
    address,
    uiUrl: `http://${ip}:${uiPort}`,
    owned: true,
    stop: () => stopChild(child),
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => { clearTimeout(timer); resolve(); });
    child.kill('SIGTERM');
  });
}

function searchAttributeCliType(type: string): string {
  const names: Record<string, string> = {
    KEYWORD: 'Keyword', TEXT: 'Text', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList',
  };
  const name = names[type];
  if (!name) throw new Error(`unknown search attribute type ${type}`);
  return name;
}
