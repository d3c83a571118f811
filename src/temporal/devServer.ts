import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { log } from '../shared/log';
import { isDiskFull } from '../shared/diskRoom';
import { listensOn } from './listeningProcess';
import { lowerPriority, serverNiceFromEnv } from './priority';
import { ALL_SEARCH_ATTRIBUTES } from './searchAttributes';
import { resolveTool, SETUP_COMMAND } from './tools';
import { makeDirsSync } from '../shared/makeDirs';
import { envText } from '../shared/env';
import { processAlive } from '../shared/processAlive';

export interface DevServerOptions {
  dataDir: string;
  port?: number;
  uiPort?: number;
  ip?: string;
  /**
   * When something else already listens on the port: 'reuse' it (an operator's dev-server), or
   * start 'another' server on free ports, so that the crawl keeps its own server, SQLite file and
   * worker (another `crawl run` with another output directory would share the task queue with
   * workers that cannot see this run's store, and stop the server when it ends).
   */
  ifPortTaken?: 'reuse' | 'another';
  /**
   * Start (or reuse) a server on this machine whatever TEMPORAL_ADDRESS says: `crawl dev-server`
   * is the command that starts one, and an operator who exported the address for workers would
   * otherwise be told to start a server with the command that just failed to.
   */
  local?: boolean;
}

/**
 * Beside the SQLite file: which process serves it and which process started it, so that a later
 * run over the same file finds it, and takes it over when its starter has died.
 */
interface ServerMarker {
  pid: number;
  ownerPid: number;
  ip: string;
  port: number;
  uiUrl: string;
  /** Stopped when its owner's command ends (`crawl run`, the demo), not by an operator's Ctrl-C (`crawl dev-server`). */
  endsWithOwner?: boolean;
}

const MARKER = 'server.json';

function readMarker(dataDir: string): ServerMarker | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(dataDir, MARKER), 'utf8')) as ServerMarker;
    return Number.isInteger(m.pid) && processAlive(m.pid) ? m : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The server we own ends with this process however it exits: a crash (process.exit from the
 * crash report, an uncaught error) as well as a normal end that skipped stop(). Only SIGKILL
 * leaves it running, and the next run takes it over (its marker). Returns the undo, for stop().
 */
function endWithThisProcess(pid: number): () => void {
  const onExit = () => {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Gone already.
    }
  };
  process.once('exit', onExit);
  return () => { process.off('exit', onExit); };
}

/**
 * Watches a server this process took over (not its child, so no exit event): `ended` settles
 * once the process is gone, or a zombie, unless stop() came first. Polled each second.
 */
function watchProcess(pid: number, logFile: string): { ended: Promise<string>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const ended = new Promise<string>((resolve) => {
    timer = setInterval(() => {
      if (running(pid)) return;
      clearInterval(timer);
      resolve(`is no longer running (taken over from an earlier run, so how it ended is not known; its log: ${logFile})`);
    }, 1000);
    timer.unref();
  });
  return { ended, stop: () => clearInterval(timer) };
}

/** Alive and not a zombie: a taken-over server that was killed stays one until it is reaped. */
function running(pid: number): boolean {
  return processAlive(pid) && !zombie(pid);
}

/** A process that has ended but was not reaped (in a container whose init does not reap). */
function zombie(pid: number): boolean {
  try {
    // Fields after the command name, which is in parentheses and may hold spaces.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

async function untilGone(pid: number, maxMs: number): Promise<void> {
  for (let waited = 0; waited < maxMs && running(pid); waited += 50) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Removes the marker of the server `pid`, and not one written since for another server over the
 * same directory: a run whose server died under it, ending after a new server had started there,
 * took that server's marker with it, and the next run started a second server on its SQLite file.
 */
function removeMarker(markerFile: string, pid: number | undefined): void {
  try {
    if ((JSON.parse(fs.readFileSync(markerFile, 'utf8')) as ServerMarker).pid !== pid) return;
  } catch {
    // Unreadable: ours, cut short as it was written.
  }
  fs.rmSync(markerFile, { force: true });
}

/** Stops a server this process did not start (its starter died): SIGTERM, then SIGKILL after 10 s. */
async function stopOrphan(pid: number, markerFile: string): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
    await untilGone(pid, 10_000);
    if (running(pid)) {
      process.kill(pid, 'SIGKILL');
      // Gone before the caller goes on: it may start another server on the same SQLite file.
      await untilGone(pid, 2_000);
    }
  } catch {
    // Gone already.
  }
  removeMarker(markerFile, pid);
}

export interface RunningServer {
  address: string;
  /** Web UI address, when this process started the server. */
  uiUrl?: string;
  /** True when this process owns the server and stop() ends it. */
  owned: boolean;
  /** The operator's server (TEMPORAL_ADDRESS), reached with their TLS settings, not one on this machine. */
  external?: boolean;
  stop(): Promise<void>;
  /**
   * For a server this process owns (started, or took over from a run that died): settles, with
   * how it ended and where its log is, if it ends before stop() (a crash, the OOM killer,
   * someone's kill). Never settles otherwise.
   */
  exited?: Promise<string>;
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
 * Otherwise a server still running over dataDir's SQLite file is used again; a server already
 * listening on the port is reused (an operator's `crawl dev-server`) or, with ifPortTaken
 * 'another', left alone for one of our own on free ports; else the pinned
 * `temporal server start-dev` is started with SQLite under dataDir.
 */
export async function ensureTemporalServer(opts: DevServerOptions): Promise<RunningServer> {
  const external = opts.local ? undefined : envText('TEMPORAL_ADDRESS');
  if (external) {
    log.info({ event: 'temporal.external', address: external }, 'using TEMPORAL_ADDRESS');
    return { address: external, owned: false, external: true, stop: async () => undefined };
  }
  // A server left running over this very file (its process outlived an earlier run): use it.
  // Starting a second one on the same SQLite file would corrupt it.
  const marker = readMarker(opts.dataDir);
  if (marker && await portOpen(marker.ip, marker.port)) {
    const address = `${marker.ip}:${marker.port}`;
    // Its starter died (a run killed with SIGKILL): it is ours now, to stop when we are done.
    const orphan = !processAlive(marker.ownerPid);
    // Another run's: it stops the server when it ends, and this run's crawl would fail there
    // ("14 UNAVAILABLE ... ECONNREFUSED" from a status call, its crawl cut off part-way).
    if (!orphan && marker.endsWithOwner && marker.ownerPid !== process.pid && !opts.local) {
      throw new Error(`another crawl (pid ${marker.ownerPid}) is running on the Temporal server of ${opts.dataDir} (${address}), which it stops when it ends: ` +
        'wait for it to finish, or give this one another output directory (to run several at once over one output directory, start ' +
        `\`crawl dev-server --data-dir ${opts.dataDir}\` before them and keep it running)`);
    }
    await waitForFrontend(address, undefined, 10_000);
    log.info({ event: 'temporal.reuse', address, pid: marker.pid, takenOver: orphan }, 'the Temporal server of this data directory is still running; using it');
    const markerFile = path.join(opts.dataDir, MARKER);
    try {
      if (orphan) fs.writeFileSync(markerFile, JSON.stringify({ ...marker, ownerPid: process.pid, endsWithOwner: !opts.local } satisfies ServerMarker));
    } catch (err) {
      throw markerError(markerFile, err);
    }
    if (!orphan) return { address, uiUrl: marker.uiUrl, owned: false, stop: async () => undefined };
    const release = endWithThisProcess(marker.pid);
    const watch = watchProcess(marker.pid, path.join(opts.dataDir, 'temporal-server.log'));
    return {
      address, uiUrl: marker.uiUrl, owned: true, exited: watch.ended,
      stop: async () => { watch.stop(); release(); await stopOrphan(marker.pid, markerFile); },
    };
  }
  const ip = opts.ip ?? '127.0.0.1';
  let port = opts.port ?? 7233;
  let uiPort = opts.uiPort ?? port + 1000;
  if (await portOpen(ip, port)) {
    if ((opts.ifPortTaken ?? 'reuse') === 'reuse') {
      const taken = `${ip}:${port}`;
      // `crawl dev-server --data-dir D`: a server on the port that is not D's keeps its data
      // elsewhere and is not stopped by this command's Ctrl-C, which said it was.
      if (opts.local) {
        throw new Error(`${taken} is taken by another server, not one over ${opts.dataDir}: pass another --port and --ui-port to start one over ${opts.dataDir}, ` +
          `or use that one if it is the server you want (TEMPORAL_ADDRESS=${taken})`);
      }
      await waitForFrontend(taken, undefined, 10_000);
      log.info({ event: 'temporal.reuse', address: taken }, 'a Temporal server is already listening; using it');
      return { address: taken, owned: false, stop: async () => undefined };
    }
    const wanted = port;
    [port, uiPort] = [await freePort(), await freePort()];
    log.warn({ event: 'temporal.port-taken', wanted: `${ip}:${wanted}`, address: `${ip}:${port}` },
      'the Temporal port is taken (another crawl run or a dev-server); starting a server of our own on free ports. To share one server, set TEMPORAL_ADDRESS and run crawl workers with the same data directory');
  }
  const nice = serverNiceFromEnv();
  const bin = resolveTool('temporal');
  if (!bin) throw new Error(`No Temporal CLI binary; run ${SETUP_COMMAND}`);
  try {
    makeDirsSync(opts.dataDir);
  } catch (err) {
    throw new Error(`cannot use ${opts.dataDir} for the Temporal server's database: ${(err as Error).message} (choose a writable directory: --data-dir, or --out for crawl run)`);
  }
  const dbFile = path.join(opts.dataDir, 'temporal.sqlite');
  // Ports picked as free can be taken by another process before the server binds them (and the
  // CLI picks its HTTP and metrics ports the same way): a few fresh attempts where the caller
  // lets us choose; an operator's explicit port gets a clear error instead of a different port.
  const mayMove = opts.ifPortTaken === 'another';
  let child: ChildProcess | undefined;
  for (let attempt = 1; !child; attempt++) {
    try {
      log.info({ event: 'temporal.start', address: `${ip}:${port}`, ui: `http://${ip}:${uiPort}`, db: dbFile }, 'starting embedded Temporal server');
      child = await startServerProcess(bin, serverArgs(ip, port, uiPort, dbFile), opts.dataDir, `${ip}:${port}`);
    } catch (err) {
      // It exited before it was ready for some other reason (once in a full test run under load:
      // exit code 2, a Go panic): tried once more before the caller hears of it.
      if (err instanceof ServerExitedError && attempt < 2) {
        log.warn({ event: 'temporal.start-failed', error: err.message, attempt }, 'the Temporal server exited before it was ready; starting it again');
        continue;
      }
      if (!(err instanceof PortInUseError) || attempt >= 4) throw err;
      if (err.which === 'frontend') {
        if (!mayMove) throw new Error(`${err.message}. Stop what listens there or pass another --port`);
        [port, uiPort] = [await freePort(), await freePort()];
      } else if (err.which === 'UI') {
        if (!mayMove && opts.uiPort !== undefined) throw new Error(`${err.message}. Stop what listens there or pass another --ui-port`);
        uiPort = await freePort();
      }
      log.warn({ event: 'temporal.port-race', port: err.port, which: err.which, attempt }, 'a port the Temporal server needs was taken as it started; starting it again');
    }
  }
  const address = `${ip}:${port}`;
  const server = child;
  const threads = server.pid ? lowerPriority(server.pid, nice) : 0;
  if (threads) log.info({ event: 'temporal.priority', nice, threads }, 'embedded Temporal server runs below the crawler\'s CPU priority');
  const uiUrl = `http://${ip}:${uiPort}`;
  const markerFile = path.join(opts.dataDir, MARKER);
  try {
    if (server.pid) fs.writeFileSync(markerFile, JSON.stringify({ pid: server.pid, ownerPid: process.pid, ip, port, uiUrl, endsWithOwner: !opts.local } satisfies ServerMarker));
  } catch (err) {
    // Left running, the server kept the command from exiting (a full disk: the error was
    // printed and the command hung), and no later run would have known it was there.
    await stopChild(server);
    throw markerError(markerFile, err);
  }
  const release = server.pid ? endWithThisProcess(server.pid) : () => undefined;
  let stopping = false;
  const logFile = path.join(opts.dataDir, 'temporal-server.log');
  const exited = new Promise<string>((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (!stopping) resolve(`${signal ? `was killed by ${signal}` : `exited with code ${code}`} (its log: ${logFile})`);
    };
    if (server.exitCode !== null || server.signalCode !== null) onExit(server.exitCode, server.signalCode);
    else server.once('exit', onExit);
  });
  return {
    address,
    uiUrl,
    owned: true,
    exited,
    stop: async () => {
      stopping = true;
      release();
      await stopChild(server);
      removeMarker(markerFile, server.pid);
    },
  };
}

function markerError(markerFile: string, err: unknown): Error {
  return new Error(`cannot write ${markerFile}: ${(err as Error).message} (${isDiskFull(err) ? 'its disk is full: free some space there, or choose another directory' : 'choose a writable directory'}: --out for crawl run, --data-dir for crawl dev-server)`);
}

function serverArgs(ip: string, port: number, uiPort: number, dbFile: string): string[] {
  return [
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
}

/** The CLI refused to start because a port it was to bind is taken. */
class PortInUseError extends Error {
  constructor(message: string, readonly which: string, readonly port: number) { super(message); }
}

/** The server process ended before it answered, for a reason other than a taken port. */
class ServerExitedError extends Error {}

/**
 * Starts the server and waits until it answers. When it exits first, the error carries the CLI's
 * own last error line from its log (for a taken port: "can't set UI port 8233: listen tcp
 * 127.0.0.1:8233: bind: address already in use").
 */
async function startServerProcess(bin: string, args: string[], dataDir: string, address: string): Promise<ChildProcess> {
  const logFile = path.join(dataDir, 'temporal-server.log');
  const serverLog = fs.openSync(logFile, 'a');
  const logStart = fs.fstatSync(serverLog).size;
  const child = spawn(bin, args, { stdio: ['ignore', serverLog, serverLog], detached: false });
  fs.closeSync(serverLog);
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  try {
    await waitForFrontend(address, child, 60_000);
    // Another server, bound to the port since we found it free, answers for a child that
    // cannot bind it (and is about to fail): not ours to use.
    if (child.pid !== undefined && listensOn(child.pid, port) === false) {
      throw new PortInUseError(`another Temporal server took ${address} as this one started`, 'frontend', port);
    }
    return child;
  } catch (err) {
    child.kill('SIGKILL');
    if (err instanceof PortInUseError) throw err;
    if (child.exitCode === null) throw err;
    const written = readFrom(logFile, logStart);
    // The CLI's own check of a port found taken ("can't set UI port ...") comes first; a port
    // taken after it, the server's listener cannot bind: it logs that, then panics (exit code 2).
    const bind = /listen tcp \S*?:(\d+): bind: address already in use/.exec(written);
    const said = lastErrorLine(written) ?? lastLines(written, 3);
    const message = `temporal server start-dev exited with code ${child.exitCode}${said ? `: ${said}` : ' before it was ready'}`;
    const [, which, taken] = /can't set (\S+) port (\d+):.*address already in use/i.exec(said) ?? [];
    if (which && taken) throw new PortInUseError(message, which, Number(taken));
    if (bind) throw new PortInUseError(`temporal server start-dev exited with code ${child.exitCode}: port ${bind[1]} was taken as it started`, Number(bind[1]) === port ? 'frontend' : 'internal', Number(bind[1]));
    throw new ServerExitedError(`${message} (log: ${logFile})`);
  }
}

function readFrom(file: string, offset: number): string {
  try {
    return fs.readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

/** The last lines the server wrote, on one line: what is left to show when no line is marked as an error. */
function lastLines(text: string, n: number): string {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).slice(-n).join(' | ').slice(0, 1_000);
}

/**
 * The CLI's error: a plain "Error: ..." line, a Go panic or fatal error (exit code 2), or the
 * message of a JSON log line at error level.
 */
function lastErrorLine(text: string): string | undefined {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean).reverse();
  for (const line of lines) {
    if (line.startsWith('Error:')) return line.slice('Error:'.length).trim();
    if (/^(panic|fatal error): /.test(line)) return line;
    if (line.startsWith('{')) {
      try {
        const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string };
        if (entry.level === 'error' || entry.level === 'fatal') return [entry.msg, entry.error].filter(Boolean).join(': ');
      } catch {
        // Not JSON after all.
      }
    }
  }
  return undefined;
}

function stopChild(child: ChildProcess): Promise<void> {
  // Ended already: by a signal, exitCode stays null and 'exit' will not come again.
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
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
