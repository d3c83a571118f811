import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { log } from '../shared/log';
import { ensureTemporalServer } from '../temporal/devServer';
import { connectClient, connectWorker, DEFAULT_NAMESPACE, ensureSearchAttributes, TASK_QUEUE, temporalAddress } from '../temporal/connect';
import { isServerUnreachable, outageLine, ServerOutageNotice } from '../crawl/serverOutage';
import { errorText } from '../shared/errorText';
import { usableCpus } from '../shared/usableCpus';
import { checkWorkerConfig, createCrawlWorker, defaultDeps, workerDiskDirs } from '../workers/worker';
import { logDiskRoom } from '../shared/diskRoom';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { readCatalog } from '../crawl/catalog';
import { planCrawl, planText } from '../crawl/check';
import { ManifestJoin } from '../crawl/manifestJoin';
import { exportedLine, exportFormat, exportRecords, exportRecordsToFile, outcomesOption, type ExportSummary } from '../crawl/exportRecords';
import { FailureTally } from '../crawl/failureTally';
import { parseSince, readCursor, writeCursor } from '../crawl/exportSince';
import { checkManifest } from '../crawl/manifest';
import { runCrawl } from '../crawl/run';
import { continuesNote, downloadedBeforeNote, duplicatesNote, emptyManifest, grewNote, queuedElsewhereNote, maxRateSetting, maxRetryAfterSetting, startCrawl, startWarnings } from '../crawl/start';
import { StartProgressLine } from '../crawl/startProgress';
import { callSignal } from '../shared/callSignal';
import { forEachLimit } from '../shared/concurrency';
import { closedListingWarner, DoneRate, heldSourcesNote, listClosedSince, listedStatus, listMonitors, listStartedSince, noMonitorsNote, monitorOf, monitoringUpdate, parseStates, recentEventsText, rowState, sourceStatus, startedListingWarner, STATUS_STATES, statusTable, stopMonitor, stoppedAnswer, type Answered, type SourceStatus } from '../crawl/status';
import { StatusPoller } from '../crawl/statusPoller';
import { polling, taskQueueWorkers, workersLine } from '../crawl/taskQueueWorkers';
import { startDemoSite } from '../demo/demo';
import { storeFromEnv } from '../pipeline/store';
import { allowNetworksFromEnv, commandGuard, pipelineConfigFromEnv } from '../pipeline/config';
import { GuardedHosts } from '../crawl/guardedHosts';
import { HostNames, hostLookupWarnings, LOOKED_UP } from '../crawl/hostLookup';
import { checkOneStore, readableStore, storeOfOutOrDataDir } from '../crawl/storeToRead';
import type { AgainKind } from '../crawl/askAgain';
import { askAgain } from '../crawl/again';
import { rememberRunSettings } from '../crawl/runSettings';
import { invalidBurst, invalidMaxConnections, invalidRate } from '../politeness/targetRate';
import { MAX_RETRY_AFTER_LIMIT_S, invalidRetryAfterCap } from '../politeness/adaptiveRate';
import { pauseUpdate, resumeUpdate, setMaxConnectionsUpdate, setMaxRateUpdate, setMaxRetryAfterUpdate, setRateUpdate } from '../workflows/messages';
import { endIdleTemporalRuntime, installTemporalRuntime, ipPortFromEnv, logWorkflowMessagesAt, metricsAddressFromEnv, serverOutage, watchServerReachability } from '../temporal/runtime';
import { serveHealth } from '../workers/healthServer';
import { installCrashReport, logProcessWarnings } from './crashReport';
import { envText } from '../shared/env';
import { decimal } from '../shared/decimal';
import { unknownSettings, unknownSettingText } from '../shared/settingNames';

const DEFAULT_DATA_DIR = envText('CRAWL_DATA_DIR') ?? path.resolve('.crawl-data');

function parsePort(value: string): number {
  const n = decimal(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError('must be a port number 1-65535');
  return n;
}

function parseRate(value: string): number {
  const n = decimal(value);
  const bad = invalidRate(n);
  if (bad) throw new InvalidArgumentError(bad);
  return n;
}

function parseBurst(value: string): number {
  const n = decimal(value);
  const bad = invalidBurst(n);
  if (bad) throw new InvalidArgumentError(bad);
  return n;
}

function parseMaxConnections(value: string): number | null {
  if (value === 'none') return null;
  const n = decimal(value);
  const bad = invalidMaxConnections(n);
  if (bad) throw new InvalidArgumentError(`${bad}, or none`);
  return n;
}

function parseRetryAfterCap(value: string): number {
  const n = decimal(value);
  const bad = invalidRetryAfterCap(n);
  if (bad) throw new InvalidArgumentError(bad);
  return n;
}

function parseInterval(value: string): number {
  const n = decimal(value);
  if (!Number.isFinite(n) || n < 1 || n > 3600) throw new InvalidArgumentError('interval must be a number of seconds from 1 to 3600');
  return n;
}

function parseWithin(value: string): number {
  const n = decimal(value);
  if (!Number.isFinite(n) || n < 1 || n > 86_400) throw new InvalidArgumentError('must be a number of seconds from 1 to 86400');
  return n;
}

function parseTop(value: string): number {
  const n = decimal(value);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new InvalidArgumentError('must be a whole number from 1 to 100');
  return n;
}

const UPDATE_TIMEOUT_MS = 15_000;

/**
 * Runs an operator update on the monitor of each source named, or with `all` of every running
 * monitor, 16 at a time: one line per source, "no such workflow" turned into a clear message, and
 * a failure for one source does not keep the others from being changed (the exit code is 1).
 */
async function onMonitors(sources: string[], all: boolean | undefined, update: (h: WorkflowHandle, answered: Answered) => Promise<string>): Promise<void> {
  if (all && sources.length) throw new InvalidArgumentError('name sources or use --all, not both');
  if (!all && !sources.length) throw new InvalidArgumentError('name at least one source (`crawl status` lists them), or use --all');
  const client = await connectClient();
  try {
    // With --all, the listing's rows stand in for a describe of each monitor.
    const listed = all ? await listMonitors(client, { running: true }) : undefined;
    const targets = listed ? [...listed.keys()].sort() : [...new Set(sources)];
    if (all && targets.length === 0) process.stdout.write('no running crawl monitors\n');
    await forEachLimit(targets, 16, async (source) => {
      try {
        const { handle, status, description } = await monitorOf(client, source, listed?.get(source));
        if (status !== 'RUNNING') throw new Error(`the monitor of "${source}" is ${status.toLowerCase()}; nothing to change`);
        // An update waits for a worker to run it: with none, it would wait for ever.
        const answered: Answered = async (call) => {
          const limit = callSignal(UPDATE_TIMEOUT_MS);
          try {
            return await client.withAbortSignal(limit.signal, call);
          } catch (err) {
            if (!limit.timedOut()) throw err;
            throw new Error(`no worker answered within ${UPDATE_TIMEOUT_MS / 1000} s: is a crawl worker running on task queue ${description.taskQueue}? ` +
              '(the request stays with the server and may still apply once a worker takes it: check `crawl status`)');
          } finally {
            limit.done();
          }
        };
        try {
          process.stdout.write(`${source}: ${await update(handle, answered)}\n`);
        } catch (err) {
          // Running when looked up, gone now: it finished (or was stopped) in between. With --all
          // and thousands of sources, 158 of 2,861 did so during one pause and read as failures.
          if (err instanceof WorkflowNotFoundError) {
            const ended = `${source}: its monitor ended before the request reached it; nothing to change (\`crawl status ${source}\` says how it ended)`;
            if (all) {
              process.stdout.write(`${ended}\n`);
              return;
            }
            throw new Error(ended);
          }
          const cause = (err as { cause?: Error }).cause;
          throw new Error(`${source}: ${cause?.message ?? (err as Error).message}`);
        }
      } catch (err) {
        process.stderr.write(`crawl: ${(err as Error).message}\n`);
        process.exitCode = 1;
      }
    });
  } finally {
    await client.connection.close();
  }
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

interface HaltedOptions { resumeHalted?: boolean; stopHalted?: boolean }

/** `--resume-halted` / `--stop-halted` of `run` and `demo`: at most one. */
function haltedAction(opts: HaltedOptions): 'resume' | 'stop' | undefined {
  if (opts.resumeHalted && opts.stopHalted) throw new InvalidArgumentError('--resume-halted and --stop-halted exclude each other');
  return opts.resumeHalted ? 'resume' : opts.stopHalted ? 'stop' : undefined;
}

export function buildProgram(): Command {
  const program = new Command('crawl')
    .description('A polite image crawler on Temporal')
    .showHelpAfterError('(run `crawl --help` for usage)');

  program
    .command('dev-server')
    .description('start the embedded Temporal server (SQLite under --data-dir, Web UI) and keep it running')
    .option('--data-dir <dir>', 'where the SQLite file and server log live', DEFAULT_DATA_DIR)
    .option('--port <port>', 'gRPC port', parsePort, 7233)
    .option('--ui-port <port>', 'Web UI port', parsePort, 8233)
    .action(async (opts: { dataDir: string; port: number; uiPort: number }) => {
      const server = await ensureTemporalServer({ dataDir: opts.dataDir, port: opts.port, uiPort: opts.uiPort, local: true });
      if (server.owned) logDiskRoom([{ dir: opts.dataDir, what: 'the Temporal server' }]);
      const client = await connectClient(server.address);
      await ensureSearchAttributes(client);
      await client.connection.close();
      // Commands in a shell whose TEMPORAL_ADDRESS names another server would not reach this one.
      const elsewhere = envText('TEMPORAL_ADDRESS');
      const note = elsewhere && elsewhere !== server.address ? ` Note: TEMPORAL_ADDRESS is ${elsewhere}, so crawl commands in this shell use that server, not this one.` : '';
      if (!server.owned) {
        // Its own server, started before and still running: this command has nothing to stop.
        process.stdout.write(`the Temporal server over ${opts.dataDir} is already running at ${server.address}${server.uiUrl ? `, Web UI at ${server.uiUrl}` : ''}; left as it is (Ctrl-C where it was started stops it).${note}\n`);
        return;
      }
      process.stdout.write(`Temporal server at ${server.address}${server.uiUrl ? `, Web UI at ${server.uiUrl}` : ''}. Ctrl-C stops it.${note}\n`);
      await untilSignal();
      await server.stop();
    });

  program
    .command('worker')
    .description('run a crawler worker (workflows and activities) against TEMPORAL_ADDRESS')
    .option('--task-queue <name>', 'task queue', TASK_QUEUE)
    .option('--allow-network <cidr>', 'open a private/loopback range or host (repeatable; also CRAWL_ALLOW_NETWORKS)', (v: string, p: string[]) => [...p, v], [] as string[])
    // As `start` takes it: the two must name one store, and an option each is easier to match
    // than an option on one and a variable on the other.
    .option('--data-dir <dir>', 'where the local store and the spool are (the store `crawl start` wrote chunk files to; CRAWL_STORE=s3 keeps only the spool here)', DEFAULT_DATA_DIR)
    .action(async (opts: { taskQueue: string; allowNetwork: string[]; dataDir: string }) => {
      // A monitor's state transitions (throttled, cooling, paused, resumed) in the worker's log,
      // at CRAWL_LOG_LEVEL: what an operator reads back after an incident.
      logWorkflowMessagesAt('INFO');
      // Configuration first: a bad setting is reported before anything connects.
      const dataDir = path.resolve(opts.dataDir);
      // Before the store's directory is made for it.
      commandGuard(opts.allowNetwork);
      const deps = defaultDeps({ allowNetworks: opts.allowNetwork, dataDir });
      checkWorkerConfig();
      const healthAddress = ipPortFromEnv('CRAWL_HEALTH_ADDRESS', 9465);
      // Answering from the start (liveness yes, readiness "starting"), so that a probe during a
      // slow start does not restart the worker; a taken port fails before anything connects.
      let worker: Awaited<ReturnType<typeof createCrawlWorker>> | undefined;
      const startedMs = Date.now();
      const health = healthAddress && await serveHealth(healthAddress, () => ({
        worker: worker?.getState() ?? 'STARTING', taskQueue: opts.taskQueue, startedMs, serverOutage: serverOutage(),
      }));
      await deps.store?.verify?.();
      const client = await connectClient();
      await ensureSearchAttributes(client);
      await client.connection.close();
      const connection = await connectWorker();
      const stopWatching = watchServerReachability(connection);
      // Closed however the worker ends: the SDK's runtime, which forwards its logs, ends with it.
      try {
        worker = await createCrawlWorker({ connection, taskQueue: opts.taskQueue, deps });
        // What it serves, where from and what it may reach, in one line: a worker given another
        // store or server than its `crawl start` (or no --allow-network) looked the same as one that was not.
        const allowNetworks = [...new Set([...allowNetworksFromEnv(), ...opts.allowNetwork])];
        log.info({
          event: 'worker.start', taskQueue: opts.taskQueue, address: temporalAddress(), namespace: DEFAULT_NAMESPACE, store: deps.store?.description,
          allowNetworks, ...userAgentAndFrom(), cpus: usableCpus(), ...(healthAddress ? { health: healthAddress.text } : {}),
        }, 'worker running');
        logDiskRoom(workerDiskDirs(deps, dataDir));
        const running = worker.run();
        // Ctrl-C / SIGTERM (a rolling restart) cancel the fetch activities: each lets its request on
        // the wire finish and heartbeats what it did, and another worker takes over from there.
        const started = worker;
        void untilSignal().then(() => { if (started.getState() === 'RUNNING') started.shutdown(); });
        await running;
      } finally {
        stopWatching();
        await health?.close();
        await connection.close();
      }
    });

  const collect = (value: string, previous: string[]) => [...previous, value];

  program
    .command('run')
    .description('crawl a manifest on the embedded default: server + worker unless TEMPORAL_ADDRESS, progress, summary; images downloaded before into the same store are not downloaded again')
    .argument('<manifest>', 'NDJSON ({"url","source"?}), CSV with a url column, or one URL per line')
    .option('--catalog <file>', 'source catalogue: [{"name","imageCount"?,"rate"?,"burst"?,"maxConnections"?}], NDJSON, or CSV with those columns')
    .option('--out <dir>', 'output directory: thumbnails, records, metadata.ndjson, embedded server data', path.resolve('crawl-out'))
    .option('--allow-network <cidr>', 'open a private/loopback range or host (repeatable)', collect, [] as string[])
    .option('--max-rate <n>', 'global ceiling, requests/s per source, over the catalogue and later set-rate (also CRAWL_MAX_RATE)', parseRate)
    .option('--max-retry-after <s>', 'longest Retry-After honoured, seconds (default 900; also CRAWL_MAX_RETRY_AFTER_S)', parseRetryAfterCap)
    .option('--resume-halted', 'try again the sources an earlier run of this command left halted')
    .option('--stop-halted', 'end for good the sources an earlier run of this command left halted')
    .action(async (manifest: string, opts: { catalog?: string; out: string; allowNetwork: string[]; maxRate?: number; maxRetryAfter?: number } & HaltedOptions) => {
      const result = await runCrawl({
        manifest, catalog: opts.catalog, outDir: path.resolve(opts.out), allowNetworks: opts.allowNetwork, maxRate: maxRateSetting(opts.maxRate),
        maxRetryAfterMs: maxRetryAfterSetting(opts.maxRetryAfter), halted: haltedAction(opts),
      });
      process.exitCode = result.exitCode;
      // Its server is gone: what is left (a worker that could not stop, a call retrying the dead
      // server) would only keep the process waiting.
      if (result.exitNow) process.exit(result.exitCode);
    });

  program
    .command('again')
    .description('ask again for the URLs whose answer was a wall\'s (pages, empty bodies, endless redirects, 4xx refusals; with --failed also those that used up their tries): writes them to OUT/again-TIME.ndjson and crawls it as run does, under the catalogue, --allow-network and --max-rate the crawls into its store were given (kept there in work/run-settings.json)')
    .argument('[sources...]', 'only these sources (default: all)')
    .option('--out <dir>', 'the output directory of the earlier crawl (run --out)', path.resolve('crawl-out'))
    .option('--failed', 'also the URLs that failed after their tries (timeouts, 5xx, robots.txt unreadable) or that the network guard refused')
    .option('--catalog <file>', 'source catalogue, as for run, instead of the one the crawls into OUT were given')
    .option('--allow-network <cidr>', 'open a private/loopback range or host, besides those the crawls into OUT opened (repeatable)', collect, [] as string[])
    .option('--max-rate <n>', 'global ceiling, requests/s per source, instead of the runs\' (also CRAWL_MAX_RATE); `none` lifts the runs\' ceiling', (v: string) => (v === 'none' ? v : parseRate(v)))
    .action(async (sources: string[], opts: { out: string; failed?: boolean; catalog?: string; allowNetwork: string[]; maxRate?: number | 'none' }) => {
      const outDir = path.resolve(opts.out);
      const result = await askAgain({
        outDir, store: await readableStore(outDir, process.cwd(), '--out'), kinds: new Set<AgainKind>(opts.failed ? ['walled', 'failed'] : ['walled']), sources,
        catalog: opts.catalog, allowNetworks: opts.allowNetwork, maxRate: opts.maxRate === 'none' ? null : maxRateSetting(opts.maxRate),
      });
      process.exitCode = result.exitCode;
      if (result.exitNow) process.exit(result.exitCode);
    });

  program
    .command('check')
    .description('what a manifest would crawl, from the files alone (no server; no store unless --data-dir or --out): its bad lines, and each source\'s URLs, rate and how long they take')
    .argument('<manifest>')
    .option('--catalog <file>', 'source catalogue, as for run')
    .option('--max-rate <n>', 'global ceiling, requests/s per source, as for run (also CRAWL_MAX_RATE)', parseRate)
    .option('--json', 'one JSON object: the sources (longest first) with their URLs, rate, rateFrom and seconds; bad lines, repeats, warnings')
    .option('--data-dir <dir>', 'also read the store the crawl would go into (as start and the workers use it; CRAWL_STORE=s3 reads S3): each source\'s URLs downloaded there before, which a start leaves out, and the time the rest takes')
    .option('--out <dir>', 'the same, for the output directory of `crawl run --out DIR`')
    .option('--allow-network <cidr>', 'a private/loopback range or host the crawl would open, as for run (repeatable; also CRAWL_ALLOW_NETWORKS): URLs on addresses left closed are warned of', collect, [] as string[])
    .option('--resolve', `also look up the host names (the ${LOOKED_UP.toLocaleString('en-US')} with the most URLs) and warn of those that do not resolve, or resolve only to addresses the network guard refuses`)
    .action(async (manifest: string, opts: { catalog?: string; maxRate?: number; json?: boolean; dataDir?: string; out?: string; allowNetwork: string[]; resolve?: boolean }) => {
      checkOneStore(opts);
      const catalog = opts.catalog ? await readCatalog(opts.catalog) : undefined;
      const store = await storeOfOutOrDataDir(opts);
      const guard = commandGuard(opts.allowNetwork);
      const guardedHosts = new GuardedHosts(guard);
      const hostNames = opts.resolve ? new HostNames() : undefined;
      const plan = await planCrawl({
        manifest, catalog, maxRate: maxRateSetting(opts.maxRate), store, guardedHosts, hostNames,
        onBadLine: (b) => process.stderr.write(`crawl: ${manifest} line ${b.line}: ${b.error} (skipped)\n`),
      });
      const rates = new Map(plan.sources.map((s) => [s.source, s.rate]));
      const looked = hostNames ? hostLookupWarnings(await hostNames.resolve(guard), (source) => rates.get(source)) : [];
      const warnings = () => [...startWarnings(plan), guardedHosts.warning('check'), ...looked].filter((w) => w !== undefined);
      const empty = emptyManifest(plan.sources.length, plan.badLines, manifest);
      process.exitCode = empty && 'error' in empty ? 1 : 0;
      if (opts.json) {
        const { sources, badLines, duplicates } = plan;
        process.stdout.write(`${JSON.stringify({ sources, seconds: sources[0]?.seconds ?? 0, badLines, duplicates, ...(plan.store !== undefined ? { store: plan.store } : {}), warnings: warnings() })}\n`);
        return;
      }
      if (empty) {
        process.stdout.write(`${'error' in empty ? empty.error : empty.note}\n`);
        return;
      }
      const notes = [plan.badLines ? `${plan.badLines} bad line(s) would be skipped (above)` : undefined, duplicatesNote(plan)].filter((n) => n !== undefined);
      process.stdout.write(`${planText(plan)}\n${notes.map((n) => `${n}\n`).join('')}`);
      for (const warning of warnings()) process.stderr.write(`crawl: ${warning}\n`);
    });

  program
    .command('start')
    .description('start (or add work to) the monitor of every source in a manifest, then return; images downloaded before into the store are left out')
    .argument('<manifest>')
    .option('--catalog <file>', 'source catalogue, as for run')
    .option('--data-dir <dir>', 'where chunk files go (the workers must see the same store)', DEFAULT_DATA_DIR)
    .option('--max-rate <n>', 'global ceiling, requests/s per source, for the sources of this manifest (a running monitor takes a changed one; also CRAWL_MAX_RATE)', parseRate)
    .option('--max-retry-after <s>', 'longest Retry-After honoured, seconds (default 900; also CRAWL_MAX_RETRY_AFTER_S)', parseRetryAfterCap)
    .action(async (manifest: string, opts: { catalog?: string; dataDir: string; maxRate?: number; maxRetryAfter?: number }) => {
      await checkManifest(manifest);
      // For the warning of URLs on refused addresses: opened only by CRAWL_ALLOW_NETWORKS here,
      // which the workers may have in the same environment (a mistyped entry fails them, and this).
      const guardedHosts = new GuardedHosts(commandGuard([]));
      const maxRate = maxRateSetting(opts.maxRate);
      const maxRetryAfterMs = maxRetryAfterSetting(opts.maxRetryAfter);
      const catalog = opts.catalog ? await readCatalog(opts.catalog) : undefined;
      const store = storeFromEnv(opts.dataDir);
      await store.verify?.();
      // The network is the workers' to open (their --allow-network): nothing of it to keep here.
      await rememberRunSettings(store, { catalog, maxRate, maxRetryAfterMs }, (m) => process.stderr.write(`crawl: ${m}\n`));
      const client = await connectClient();
      // As a worker would: `crawl start` may come first on a new server, whose monitors could
      // not start without them. Where registering is not allowed (the operator's job), the
      // start says what is missing itself.
      await ensureSearchAttributes(client).catch(() => undefined);
      // On a terminal only: stdout is the command's answer, and stderr otherwise a log of JSON lines.
      const progress = process.stderr.isTTY ? new StartProgressLine(process.stderr, manifest) : undefined;
      const summary = await startCrawl({
        client, store, manifest, taskQueue: TASK_QUEUE, maxRate, maxRetryAfterMs, catalog, guardedHosts,
        onBadLine: (b) => { progress?.done(); process.stderr.write(`crawl: ${manifest} line ${b.line}: ${b.error} (skipped)\n`); },
        onProgress: progress && ((p) => progress.update(p)),
      }).finally(() => progress?.done());
      for (const note of [continuesNote(summary, manifest), grewNote(summary, manifest)]) if (note) process.stdout.write(`${note}\n`);
      for (const [name, s] of summary.sources) process.stdout.write(`${name}: ${s.urls} URLs in ${s.chunks} chunk(s)${s.alreadyDone ? `, ${s.alreadyDone} already crawled` : ''}${s.downloadedBefore ? `, ${s.downloadedBefore} downloaded under another manifest` : ''}${s.queuedElsewhere ? `, ${s.queuedElsewhere} queued under another manifest` : ''}\n`);
      const empty = emptyManifest(summary.sources.size, summary.badLines, manifest);
      if (empty && 'error' in empty) {
        process.stderr.write(`crawl: ${empty.error}\n`);
        process.exitCode = 1;
      } else if (empty) {
        process.stdout.write(`${empty.note}\n`);
      }
      if (summary.badLines) process.stdout.write(`${summary.badLines} bad line(s) skipped\n`);
      const duplicates = duplicatesNote(summary);
      if (duplicates) process.stdout.write(`${duplicates}\n`);
      for (const note of [downloadedBeforeNote(summary), queuedElsewhereNote(summary)]) if (note) process.stdout.write(`${note}\n`);
      for (const warning of [...startWarnings(summary), guardedHosts.warning('start')]) if (warning) process.stderr.write(`crawl: ${warning}\n`);
      // From the visibility listing (one call a thousand monitors); not being able to tell is no reason to fail the start.
      const held = await listMonitors(client, { running: true }).then((m) => heldSourcesNote(m, summary.sources.keys()), () => undefined);
      if (held) process.stderr.write(`crawl: ${held}\n`);
      await client.connection.close();
    });

  program
    .command('status')
    .description('show every source: a table, --json, or --watch for a monitoring_update line every 5 s')
    .argument('[sources...]', 'sources to show (default: all)')
    .option('--json', 'one JSON object')
    .option('--watch', 'print a monitoring_update JSON line every --interval seconds until Ctrl-C')
    .option('--interval <seconds>', 'watch interval', parseInterval, 5)
    .option('--within <seconds>', 'a table or --json: running monitors not asked by then show what their search attributes say', parseWithin, 30)
    .option('--state <list>', `only the sources in these states, comma-separated: ${STATUS_STATES.join(', ')} (halted,paused: those waiting for an operator)`, (v: string) => {
      try {
        return parseStates(v);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    })
    .action(async (sources: string[], opts: { json?: boolean; watch?: boolean; interval: number; within: number; state?: Set<string> }) => {
      const client = await connectClient();
      // Sources named are described one by one (an unknown one is an error); all of them come
      // with their status and search attributes from one listing.
      const listedAtMs = Date.now();
      const listed = sources.length ? undefined : await listMonitors(client);
      if (listed?.size === 0 && !opts.watch) process.stderr.write(`crawl: ${noMonitorsNote(temporalAddress(), DEFAULT_NAMESPACE)}\n`);
      // --state picks from the listing first (its search attributes say each state at once): of
      // thousands of sources, a few halted ones are asked, not all of them. Rows are picked again
      // by the state their monitors answer with. A watch follows every source, and shows those in
      // the states asked for as each line is written: a source halting later is among them.
      const picked = (s: SourceStatus) => !opts.state || opts.state.has(rowState(s));
      const listedNames = listed ? [...listed.keys()].sort() : sources;
      const names = listed && opts.state && !opts.watch ? listedNames.filter((n) => picked(listedStatus(n, listed.get(n)!, ''))) : listedNames;
      const notAskedNote = opts.watch ? 'not asked yet' : `not asked within --within ${opts.within} s`;
      const doneRate = new DoneRate();
      // A watch asks each running monitor in turn, 20 a second, as `run` does: every status
      // query is CPU a worker takes from crawling (~3 ms each). The listing stands in for a
      // describe at a source's first ask only: a watch asks again when the monitor may have closed.
      const firstAsk = new Set(names);
      const poller = new StatusPoller(names, (s) => sourceStatus(client, s, { listed: firstAsk.delete(s) ? listed?.get(s) : undefined }), {
        perPoll: Math.max(20, Math.round(20 * opts.interval)),
        placeholder: (s) => {
          const info = listed?.get(s);
          return info && { ...listedStatus(s, info, notAskedNote), ...(info.status.name === 'RUNNING' ? { taskQueue: info.taskQueue } : {}) };
        },
        // A table or --json asks every source, for a while; a watch notices closes at once.
        ...(opts.watch ? {
          closedSince: (sinceMs: number) => listClosedSince(client, sinceMs),
          onListingError: closedListingWarner(),
          // Every source: also those whose crawls start while it watches.
          ...(listed ? {
            startedSince: {
              fromMs: listedAtMs,
              list: (sinceMs: number) => listStartedSince(client, sinceMs),
              onError: startedListingWarner(),
            },
          } : {}),
        } : { askWithinMs: opts.within * 1000 }),
      });
      // A watch outlives a restart of its server (a dashboard's feed): it says so and waits.
      const outage = new ServerOutageNotice(temporalAddress());
      // A watch says on stderr when a queue's workers are all gone, and when one is back: once, not every line.
      const workerless = new Set<string>();
      for (;;) {
        let unreachable: unknown;
        const polled = await poller.poll().catch((err: unknown) => {
          if (!opts.watch || !isServerUnreachable(err)) throw err;
          unreachable = err;
          return undefined;
        });
        if (!polled) {
          const note = outage.down(Date.now(), unreachable);
          if (note) process.stdout.write(outageLine('down', note, false));
          await new Promise((r) => setTimeout(r, opts.interval * 1000));
          continue;
        }
        const back = outage.up(Date.now());
        if (back) process.stdout.write(outageLine('up', back, false));
        const statuses = polled.filter(picked);
        if (opts.state && !opts.watch && statuses.length === 0 && listedNames.length > 0) process.stderr.write(`crawl: none of the ${listedNames.length} source(s) is ${[...opts.state].join(' or ')}\n`);
        const update = monitoringUpdate(statuses, doneRate.baseline());
        // Whether any worker serves the running monitors' task queues: when nothing moves, the first question.
        const queues = [...new Set(statuses.flatMap((st) => (st.taskQueue ? [st.taskQueue] : [])))].sort();
        // A namespace that does not let this client describe task queues (a narrow API key) gets no such line.
        const described = await Promise.all(queues.map((q) => taskQueueWorkers(client, q).then((list) => [q, list] as const, () => undefined)));
        const workers = new Map(described.filter((d) => d !== undefined));
        if (opts.watch) {
          // How many workers poll each running source's queue: a feed's alert when a fleet is gone.
          const polled = Object.fromEntries([...workers].map(([q, list]) => [q, polling(list).length]));
          process.stdout.write(`${JSON.stringify({ ...update, workers: polled })}\n`);
        } else if (opts.json) {
          const sources = statuses.map((s) => ({ ...s, secondsLeft: update.sources[s.source]?.secondsLeft ?? null }));
          process.stdout.write(`${JSON.stringify({ sources, secondsLeft: update.global.secondsLeft, workers: Object.fromEntries(workers) }, null, 2)}\n`);
        } else {
          process.stdout.write(`${statusTable(statuses)}\n`);
          for (const [q, list] of workers) if (polling(list).length) process.stdout.write(`${workersLine(q, list)}\n`);
          const events = sources.length ? recentEventsText(statuses) : undefined;
          if (events) process.stdout.write(`\n${events}\n`);
        }
        for (const [q, list] of workers) {
          const none = polling(list).length === 0;
          if (opts.watch && none === workerless.has(q)) continue;
          if (none) workerless.add(q);
          else workerless.delete(q);
          if (none || opts.watch) process.stderr.write(`crawl: ${workersLine(q, list)}\n`);
        }
        if (!opts.watch && poller.notAsked) {
          process.stderr.write(`crawl: ${poller.notAsked} monitor(s) not asked within ${opts.within} s (each answer waits its turn behind the worker's workflow tasks); ` +
            `their rows show what their search attributes say (state, rate, done, errors). Name sources to see them in full, or give --within a longer time.\n`);
        }
        // Its reader gone (`--watch | head`), a watch has no one left to tell.
        if (!opts.watch || !process.stdout.writable) break;
        doneRate.record(Date.now(), update.global.done);
        await new Promise((r) => setTimeout(r, opts.interval * 1000));
      }
      await client.connection.close();
    });

  program
    .command('export')
    .description('write the metadata records (one NDJSON line per URL, or CSV) from the store, to stdout or --out')
    .argument('[sources...]', 'only these sources (default: all)')
    .option('--out <file>', 'write to this file (replaced once complete) instead of stdout; a name ending in .csv (or .csv.gz) writes CSV, one ending in .gz gzip-compressed')
    .option('--csv', 'CSV for a spreadsheet or a database import: a header, then one row per record (same as --format csv)')
    .option('--format <format>', 'ndjson or csv (default: csv for an --out file ending in .csv, else ndjson)')
    .option('--outcome <list>', 'only the records with these outcomes, comma-separated: done, linkrot, robots, content, refused, error', outcomesOption)
    .option('--manifest <file>', 'only the records of this manifest\'s URLs, each with its line number and the line\'s own fields (an id column, say) as "manifest"')
    .option('--all-records', 'every record: a URL asked again keeps each of its records (its history), not only its done or else latest one')
    .option('--since <time>', 'only what was written to the store since then, for loading a running crawl\'s results a piece at a time: a time (2026-12-01T09:30Z; UTC unless it gives an offset) or a span ago (45m, 6h, 7d)')
    .option('--cursor <file>', 'export what was written since the time this file holds (everything when there is no file), then move it on: the same command run again (from cron, say) gives what is new since')
    .option('--data-dir <dir>', 'where the local store is (as for start and worker; `crawl run --out DIR` uses DIR)', DEFAULT_DATA_DIR)
    .action(async (sources: string[], opts: { out?: string; dataDir: string; allRecords?: boolean; csv?: boolean; format?: string; manifest?: string; outcome?: Set<string>; since?: string; cursor?: string }) => {
      if (opts.csv && opts.format !== undefined && opts.format.toLowerCase() !== 'csv') throw new Error(`--csv and --format ${opts.format} say different things: give one`);
      if (opts.since !== undefined && opts.cursor !== undefined) throw new Error('--since and --cursor both say where to start: give one (the cursor file holds its time)');
      const format = exportFormat(opts.csv ? 'csv' : opts.format, opts.out);
      const cursor = opts.since !== undefined ? { since: parseSince(opts.since) } : opts.cursor !== undefined ? readCursor(opts.cursor) : undefined;
      const store = await readableStore(opts.dataDir);
      const join = opts.manifest === undefined ? undefined : await ManifestJoin.read(opts.manifest);
      const exportOpts = { allRecords: opts.allRecords, format, join, outcomes: opts.outcome, since: cursor?.since, given: cursor?.given, newest: opts.cursor !== undefined };
      let summary: ExportSummary;
      if (opts.out) {
        summary = await exportRecordsToFile(store, path.resolve(opts.out), sources, exportOpts);
      } else {
        summary = await exportRecords(store, (text) => new Promise<void>((resolve, reject) => {
          // Waits for a slow reader (a pipe into jq) instead of buffering the whole export.
          if (!process.stdout.writable) return reject(Object.assign(new Error('stdout closed'), { code: 'ERR_STREAM_DESTROYED' }));
          if (process.stdout.write(text)) resolve();
          else process.stdout.once('drain', resolve).once('error', reject);
        }), sources, exportOpts);
      }
      // Moved on only once the export is whole: one that fails is given again in full next time.
      const next = summary.recent?.next(cursor?.since);
      if (opts.cursor !== undefined && next !== undefined) await writeCursor(opts.cursor, next);
      for (const s of summary.sourcesWithoutRecords) process.stderr.write(`crawl: no records for source "${s}" in the ${store.description} (see \`crawl status\`)\n`);
      if (summary.sourcesWithoutRecords.length) process.exitCode = 1;
      process.stderr.write(`crawl: ${exportedLine(summary, store.description, {
        out: opts.out && path.resolve(opts.out), format, join, filtered: opts.outcome !== undefined,
        since: cursor?.since, next: next === undefined ? undefined : { at: next.since, cursor: opts.cursor },
      })}\n`);
    });

  program
    .command('reasons')
    .description('why URLs did not end as done: each source\'s commonest reasons, from the records so far')
    .argument('[sources...]', 'only these sources (default: all)')
    .option('--data-dir <dir>', 'where the local store is (as for export)', DEFAULT_DATA_DIR)
    .option('--out <dir>', 'the same, for the output directory of `crawl run --out DIR`')
    .option('--top <n>', 'reasons per source', parseTop, 3)
    .action(async (sources: string[], opts: { dataDir: string; out?: string; top: number }, cmd: Command) => {
      // `run` ends by naming its output directory as --out, and `check` and `again` take it so.
      // --data-dir's default is no store given: with --out alone, --out's.
      const givenDataDir = cmd.getOptionValueSource('dataDir') === 'default' ? undefined : opts.dataDir;
      const store = (await storeOfOutOrDataDir({ out: opts.out, dataDir: givenDataDir })) ?? await readableStore(opts.dataDir);
      const tally = new FailureTally();
      const summary = await exportRecords(store, () => undefined, sources, { inspect: (text) => tally.addText(text) });
      for (const s of summary.sourcesWithoutRecords) process.stderr.write(`crawl: no records for source "${s}" in the ${store.description} (see \`crawl status\`)\n`);
      if (summary.sourcesWithoutRecords.length) process.exitCode = 1;
      const lines = tally.lines(opts.top);
      if (lines.length) process.stdout.write(`${lines.join('\n')}\n`);
      else if (summary.records) process.stdout.write(`every one of the ${summary.records} record(s) so far is done\n`);
      else if (!summary.sourcesWithoutRecords.length) process.stdout.write(`no records yet in the ${store.description}\n`);
    });

  // pause, resume and stop take several sources, or --all running monitors (an incident: pause everything).
  const operator = (name: string, description: string) => program.command(name).description(description)
    .argument('[sources...]').option('--all', 'every running crawl monitor');

  operator('pause', 'stop granting requests to sources (nothing is lost)')
    .action(async (sources: string[], opts: { all?: boolean }) => { await onMonitors(sources, opts.all, (h, answered) => answered(() => h.executeUpdate(pauseUpdate))); });
  operator('resume', 'resume paused or halted sources')
    .option('--rate <n>', 'new target rate, requests/s', parseRate)
    .action(async (sources: string[], opts: { all?: boolean; rate?: number }) => {
      await onMonitors(sources, opts.all, (h, answered) => answered(() => h.executeUpdate(resumeUpdate, { args: [{ rate: opts.rate }] })));
    });
  program.command('set-rate').description('set a source\'s target rate (and burst)')
    .argument('<source>')
    .argument('<rate>', 'requests/s', parseRate)
    .option('--burst <n>', 'extra requests allowed at once', parseBurst)
    .action(async (source: string, rate: number, opts: { burst?: number }) => { await onMonitors([source], false, (h, answered) => answered(() => h.executeUpdate(setRateUpdate, { args: [{ rate, burst: opts.burst }] }))); });
  // `--max-rate` reaches only the monitors a command starts; this changes it for running ones.
  program.command('set-max-rate').description('set the global ceiling (requests/s per source) of running crawls; `none` lifts it')
    .argument('<rate>', 'requests/s, or none', (v: string) => (v === 'none' ? null : parseRate(v)))
    .argument('[sources...]').option('--all', 'every running crawl monitor')
    .action(async (maxRate: number | null, sources: string[], opts: { all?: boolean }) => {
      await onMonitors(sources, opts.all, (h, answered) => answered(() => h.executeUpdate(setMaxRateUpdate, { args: [{ maxRate }] })));
    });
  // Likewise `--max-retry-after`: an operator who learns a site is back need not wait out its hold.
  program.command('set-max-retry-after').description('set the longest Retry-After honoured by running crawls, seconds: a longer hold now ends that long from now')
    .argument('<seconds>', `1 to ${MAX_RETRY_AFTER_LIMIT_S}`, parseRetryAfterCap)
    .argument('[sources...]').option('--all', 'every running crawl monitor')
    .action(async (seconds: number, sources: string[], opts: { all?: boolean }) => {
      await onMonitors(sources, opts.all, (h, answered) => answered(() => h.executeUpdate(setMaxRetryAfterUpdate, { args: [{ maxRetryAfterMs: seconds * 1000 }] })));
    });
  // A site's owner asks for no more than so many connections: the catalogue's maxConnections, for a crawl already running.
  program.command('set-max-connections').description('set the most requests a worker keeps open at once to each site of running crawls\' sources; `none` lifts it')
    .argument('<n>', 'requests open at once (1 to 4096), or none', parseMaxConnections)
    .argument('[sources...]').option('--all', 'every running crawl monitor')
    .action(async (maxConnections: number | null, sources: string[], opts: { all?: boolean }) => {
      await onMonitors(sources, opts.all, (h, answered) => answered(() => h.executeUpdate(setMaxConnectionsUpdate, { args: [{ maxConnections }] })));
    });
  operator('stop', 'stop crawling sources for good (their monitors complete)')
    .action(async (sources: string[], opts: { all?: boolean }) => {
      await onMonitors(sources, opts.all, async (h, answered) => {
        // Returning once the monitor has completed: a `crawl start` which follows then starts a
        // new crawl instead of reaching the stopping one (which would ignore it).
        const { answer, completed, urls } = await stopMonitor(h, answered);
        return completed ? stoppedAnswer(answer, urls) : `${answer} (its monitor has not completed yet: wait for it before starting the source again)`;
      });
    });

  program
    .command('demo')
    .description('crawl a generated set of images from four loopback sources (one rate-limits, one fails)')
    .option('--out <dir>', 'output directory', path.resolve('crawl-demo'))
    .option('--scale <n>', 'multiply the number of images', (v) => decimal(v), 1)
    .option('--resume-halted', 'try "broken" again after an earlier demo halted it')
    .option('--stop-halted', 'end "broken" for good after an earlier demo halted it')
    .action(async (opts: { out: string; scale: number } & HaltedOptions) => {
      const halted = haltedAction(opts);
      const out = path.resolve(opts.out);
      const site = await startDemoSite(path.join(out, 'site'), opts.scale);
      try {
        const { earlier } = site;
        if (earlier?.movedTo !== undefined) {
          process.stderr.write(`crawl: the earlier demo's port ${earlier.port} is taken; serving on ${earlier.movedTo}, so every URL is new to ${out} ` +
            '(the earlier URLs stay as they were; use another --out for a clean run)\n');
        } else if (earlier) {
          process.stdout.write(`demo: ${out} holds an earlier demo: this run takes up its crawl, and what it finished is not fetched again (another --out, or removing ${out}, starts afresh)\n`);
        }
        process.stdout.write('demo: museum 2/s (robots.txt, a 404), photos 25/s, throttled 10/s (429s), broken 5/s (500s: the breaker halts it)\n');
        const result = await runCrawl({ manifest: site.manifest, catalog: site.catalog, outDir: out, allowNetworks: ['127.0.0.0/8'], halted, againHint: false });
        if (result.exitCode >= 128 || result.serverLost) { // interrupted or its server gone: runCrawl has said so
          process.exitCode = result.exitCode;
          if (result.exitNow) { await site.stop(); process.exit(result.exitCode); }
          return;
        }
        const unexpected = result.statuses.filter((s) => s.source !== 'broken' && s.workflowStatus !== 'COMPLETED');
        const brokenHalted = result.statuses.some((s) => s.source === 'broken' && s.stats?.state === 'halted');
        process.stdout.write(unexpected.length ? 'demo: some sources did not finish\n'
          : brokenHalted ? 'demo: done; "broken" halted as intended, its URLs kept for an operator (`bin/crawl demo --resume-halted` tries it again, `--stop-halted` ends it)\n'
            : 'demo: done\n');
        process.exitCode = unexpected.length ? 1 : 0;
      } finally {
        await site.stop();
      }
    });

  return program;
}

/** The reader of our stdout went away (`crawl export | head`): not an error of ours. */
function isClosedStdout(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}

/**
 * Whether the command runs a worker, and so serves metrics when CRAWL_METRICS_ADDRESS is set:
 * `worker` always, `run` and `demo` unless they crawl on TEMPORAL_ADDRESS's workers.
 */
function runsWorker(command: string | undefined): boolean {
  return command === 'worker' || ((command === 'run' || command === 'demo') && !envText('TEMPORAL_ADDRESS'));
}

export async function main(argv: string[]): Promise<void> {
  installCrashReport(log);
  logProcessWarnings(log);
  // A worker's output is its JSON log; the other commands talk to a person.
  for (const unknown of unknownSettings(process.env)) {
    if (argv[2] === 'worker') log.warn({ event: 'unknown-setting', setting: unknown.name, ...(unknown.meant ? { meant: unknown.meant } : {}) }, unknownSettingText(unknown));
    else process.stderr.write(`crawl: ${unknownSettingText(unknown)}\n`);
  }
  try {
    // Only those: `crawl status` beside a worker would find the worker's port taken.
    installTemporalRuntime(undefined, runsWorker(argv[2]) ? metricsAddressFromEnv() : undefined, true);
  } catch (err) {
    process.stderr.write(`crawl: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  // Without a listener a closed pipe would crash the process, a crawl under way included; the
  // output is lost, the work goes on (export stops: its writes fail and end it quietly).
  process.stdout.on('error', (err) => {
    if (!isClosedStdout(err)) process.stderr.write(`crawl: writing output: ${err.message}\n`);
  });
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (isClosedStdout(err)) return;
    process.stderr.write(`crawl: ${errorText(err)}\n`);
    process.exitCode = process.exitCode || 1;
  } finally {
    await endIdleTemporalRuntime();
  }
}

if (require.main === module) void main(process.argv);

/** What every request says of us (User-Agent, From), for the worker's start line. */
function userAgentAndFrom(): { userAgent: string; from?: string } {
  const { userAgent, from } = pipelineConfigFromEnv();
  return { userAgent, ...(from !== undefined ? { from } : {}) };
}
