import { setMaxListeners } from 'node:events';
import path from 'node:path';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { LocalStore, storeFromEnv, type ObjectStore } from '../pipeline/store';
import { commandGuard, pipelineConfigFromEnv, thumbnailSettingsFromEnv } from '../pipeline/config';
import { isServerUnreachable, outageLine, ServerOutageNotice } from './serverOutage';
import { bytesText, DiskRoomWatch, type DiskNotice } from '../shared/diskRoom';
import { log } from '../shared/log';
import { shellWord } from '../shared/shellWord';
import { connectClient, connectWorker, ensureSearchAttributes, TASK_QUEUE } from '../temporal/connect';
import { ensureTemporalServer } from '../temporal/devServer';
import { checkWorkerConfig, createCrawlWorker, defaultDeps } from '../workers/worker';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { resumeUpdate } from '../workflows/messages';
import { monitorWorkflowId, type MonitorOptions } from '../workflows/monitorState';
import { type Catalog, readCatalog } from './catalog';
import { rememberRunSettings } from './runSettings';
import { exportRecordsToFile, supersededNote } from './exportRecords';
import { FailureTally } from './failureTally';
import { againNote } from './againNote';
import { GuardedHosts } from './guardedHosts';
import { checkManifest, manifestHasContent } from './manifest';
import { continuesNote, downloadedBeforeNote, duplicatesNote, emptyManifest, grewNote, queuedElsewhereNote, nothingToCrawl, startCrawl, startWarnings, type StartSummary } from './start';
import { progressBarLine } from './progressBar';
import { ChangedSources, closedListingWarner, crawlCommandFor, serverElsewhereNote, DoneRate, listClosedSince, monitoringUpdate, NetworkDownNotice, sourceStatus, statusTable, SourceNotes, stopMonitor, WorkersBehindNotice, type SourceStatus } from './status';
import { StartProgressLine } from './startProgress';
import { StatusPoller } from './statusPoller';
import { overlapRefusal, RunRegistration } from './runningCrawls';
import { envText } from '../shared/env';
import { forEachLimit, fulfilsWithin } from '../shared/concurrency';
import { makeDirsSync } from '../shared/makeDirs';
import { expectServerGone, logWorkflowMessagesAt, watchServerReachability } from '../temporal/runtime';

export interface RunOptions {
  manifest: string;
  /** A catalogue file, or one read already (`crawl again`'s). */
  catalog?: string | Catalog;
  outDir: string;
  allowNetworks: string[];
  monitorOptions?: Partial<MonitorOptions>;
  /** The global ceiling, requests/s, for every source this run starts (StartOptions.maxRate). */
  maxRate?: number;
  /** The longest Retry-After honoured, ms (StartOptions.maxRetryAfterMs). */
  maxRetryAfterMs?: number;
  /**
   * What to do with a source that an earlier run left halted (its monitor keeps its URLs in
   * OUT/temporal): try it again, or end it for good. By default it is reported and left halted.
   */
  halted?: 'resume' | 'stop';
  /** Where progress goes; a TTY gets a bar, anything else JSON lines. */
  stream?: NodeJS.WriteStream;
  /**
   * Whether the summary ends with the `crawl again` commands for what a wall answered or what
   * failed (default true). Not in the demo, whose sites are gone once it ends; `unless-held`:
   * not when other crawls' chunks held URLs of the manifest, which `crawl again` then asks for
   * in a round of its own (nor, then, the reasons URLs are not done yet).
   */
  againHint?: boolean | 'unless-held';
  /** On the embedded default, what to do about a source left halted, when not this command with --resume-halted or --stop-halted. */
  haltedNext?: (source: string) => string;
  pollMs?: number;
  /** Where runs on servers of their own note their sites (RunRegistration; tests: a directory of their own). */
  runsDir?: string;
}

export interface RunResult {
  exitCode: number;
  statuses: SourceStatus[];
  badLines: number;
  /** The embedded server ended under the run, which stopped (runCrawl has said so). */
  serverLost?: boolean;
  /** URLs of the manifest left out because another manifest's unfinished chunks held them (see PriorWork). */
  queuedElsewhere?: number;
  /**
   * End the process now: its server is gone, and what is left (a worker that could not be
   * stopped, a client call retrying the dead server for ~20 s) would only keep it waiting.
   */
  exitNow?: boolean;
}

/** How often the disks of the embedded server and the local store are looked at (a statfs each). */
const DISK_CHECK_MS = 5_000;
/** How often a run whose server cannot be reached asks it again. */
const SERVER_RETRY_MS = 5_000;

/** How long the worker gets to stop once its embedded server is gone (it cannot finish in order). */
const WORKER_STOP_WITHOUT_SERVER_MS = 10_000;

/**
 * The whole crawl on the embedded default: server (unless TEMPORAL_ADDRESS), an in-process
 * worker (unless TEMPORAL_ADDRESS: then workers are the operator's), start every source,
 * show progress, export the metadata as NDJSON and summarise. A source that halts for good
 * does not keep us waiting: it is reported and left for an operator, and the exit code is 1.
 */
export async function runCrawl(opts: RunOptions): Promise<RunResult> {
  const out = opts.stream ?? process.stdout;
  // Inputs first: a typo in a path should not cost a server start.
  await checkManifest(opts.manifest);
  const catalog = typeof opts.catalog === 'string' ? await readCatalog(opts.catalog) : opts.catalog;
  // A bad --allow-network entry is refused before the output directory is made, and before it
  // is kept in the store's run settings for `crawl again` to trip on.
  const guard = commandGuard(opts.allowNetworks);
  if (!manifestHasContent(opts.manifest)) {
    // Nothing to start a server for; a manifest of blank lines only is caught here too.
    out.write(`${nothingToCrawl(opts.manifest)}\n`);
    return { exitCode: 0, statuses: [], badLines: 0 };
  }
  const store = storeFromEnv(opts.outDir);
  const warn = (m: string) => process.stderr.write(`crawl: ${m}\n`);
  const embedded = !envText('TEMPORAL_ADDRESS');
  // The in-process worker's configuration too, before a server is started for it.
  const cfg = embedded ? pipelineConfigFromEnv() : undefined;
  if (embedded) checkWorkerConfig();
  // What the in-process worker is told (originals kept or not, how thumbnails are made) is kept
  // for later runs into the store; what it is not told, the store's holds. Workers of a server
  // named by TEMPORAL_ADDRESS follow their own environment, so nothing is kept from this one's.
  const askedOriginals = cfg && envText('CRAWL_KEEP_ORIGINALS') !== undefined ? cfg.keepOriginals : undefined;
  const askedHash = cfg && envText('CRAWL_PERCEPTUAL_HASH') !== undefined ? cfg.perceptualHash : undefined;
  const askedThumbnails = cfg ? thumbnailSettingsFromEnv(cfg) : {};
  await store.verify?.();
  makeDirsSync(opts.outDir);
  const settings = await rememberRunSettings(store, {
    catalog, allowNetworks: opts.allowNetworks, maxRate: opts.maxRate, maxRetryAfterMs: opts.maxRetryAfterMs,
    ...(askedOriginals !== undefined ? { keepOriginals: askedOriginals } : {}),
    ...(askedHash !== undefined ? { perceptualHash: askedHash } : {}),
    ...(Object.keys(askedThumbnails).length ? { thumbnails: askedThumbnails } : {}),
  }, warn);
  const keepOriginals = settings.keepOriginals ?? false;
  const perceptualHash = settings.perceptualHash ?? false;
  const thumbnails = settings.thumbnails ?? {};
  const config = {
    keepOriginals, perceptualHash,
    ...(thumbnails.format !== undefined ? { thumbnailFormat: thumbnails.format } : {}),
    ...(thumbnails.maxSide !== undefined ? { thumbnailMaxSide: thumbnails.maxSide } : {}),
    ...(thumbnails.quality !== undefined ? { thumbnailQuality: thumbnails.quality } : {}),
  };
  const deps = embedded ? defaultDeps({ dataDir: opts.outDir, allowNetworks: opts.allowNetworks, config }) : undefined;
  if (deps && keepOriginals && askedOriginals === undefined) warn(`keeping each image's own bytes under originals/, as the earlier crawls into the ${store.description} did (CRAWL_KEEP_ORIGINALS=false: no more)`);
  if (deps && perceptualHash && askedHash === undefined) warn(`hashing each thumbnail (dHash), as the earlier crawls into the ${store.description} did (CRAWL_PERCEPTUAL_HASH=false: no more)`);
  const keptThumbnails = (Object.keys(thumbnails) as (keyof typeof thumbnails)[]).filter((k) => askedThumbnails[k] === undefined);
  if (deps && keptThumbnails.length) {
    const vars = { format: 'CRAWL_THUMBNAIL_FORMAT', maxSide: 'CRAWL_THUMBNAIL_MAX_SIDE', quality: 'CRAWL_THUMBNAIL_QUALITY' } as const;
    warn(`making thumbnails as the earlier crawls into the ${store.description} did: ${keptThumbnails.map((k) => `${vars[k]}=${thumbnails[k]}`).join(', ')} (${keptThumbnails.length > 1 ? 'set one to change it' : 'set it to change it'})`);
  }
  // On a terminal the run reports each source's state changes itself, above its progress bar.
  if (deps && out.isTTY && process.stderr.isTTY) logWorkflowMessagesAt('OFF');
  const metadataFile = path.join(opts.outDir, 'metadata.ndjson');
  const serverDir = path.join(opts.outDir, 'temporal');
  // The embedded server's disk filling stopped the crawl with only "no worker answered" to show.
  const disks = new DiskRoomWatch([
    ...(envText('TEMPORAL_ADDRESS') ? [] : [{ dir: serverDir, what: 'the embedded Temporal server' }]),
    ...(store instanceof LocalStore ? [{ dir: store.root, what: 'the store' }] : []),
  ]);
  for (const d of disks.check()) {
    // The server could not even start: it wrote 3 MB before its first workflow, then failed.
    if (d.state === 'full') throw new Error(`the disk of ${d.dirs.join(' and ')} is full (${bytesText(d.freeBytes)} free): free some space there, or choose another --out`);
    process.stderr.write(`crawl: ${d.note}\n`);
  }
  const server = await ensureTemporalServer({ dataDir: serverDir, ifPortTaken: 'another' });
  let worker: Worker | undefined;
  let workerDone: Promise<void> | undefined;
  let workerConnection: NativeConnection | undefined;
  let stopWatching = () => {};
  const interrupt = watchForInterrupt();
  // Ours stops with a Ctrl-C; an external server does not, and what the worker says of it counts.
  if (!server.external) void interrupt.stopped.then(() => { if (interrupt.signal) expectServerGone(); });
  // The server ending under us (a crash, the OOM killer) stops the run as Ctrl-C would, saying
  // so: otherwise a status query failed ~30 s later without a word of why, and a Ctrl-C
  // meanwhile waited on a worker retrying the dead server.
  void server.exited?.then((why) => interrupt.fail(`the embedded Temporal server ${why}`));
  let workerStopped = true;
  let registration: RunRegistration | undefined;
  const stopWorker = async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    const done = workerDone?.catch((err) => log.error({ event: 'worker.failed', error: String(err) }, 'worker failed'));
    if (!interrupt.failure || !done) return done;
    workerStopped = await fulfilsWithin(done, WORKER_STOP_WITHOUT_SERVER_MS);
  };
  try {
    const dial = server.external ? undefined : server.address;
    const client = await connectClient(dial);
    await ensureSearchAttributes(client);
    if (deps) {
      workerConnection = await connectWorker(dial);
      stopWatching = watchServerReachability(workerConnection);
      worker = await createCrawlWorker({ connection: workerConnection, deps });
      workerDone = worker.run();
    }
    const progress = new StartProgressLine(out, opts.manifest);
    // Only for our own worker: the operator's workers' guard is theirs, opened as we cannot know.
    const guardedHosts = deps ? new GuardedHosts(guard) : undefined;
    const summary = await startCrawl({
      client, store, manifest: opts.manifest, catalog, taskQueue: TASK_QUEUE, monitorOptions: opts.monitorOptions, maxRate: opts.maxRate, maxRetryAfterMs: opts.maxRetryAfterMs, signal: interrupt.nextAbortSignal(),
      onBadLine: (b) => { progress.done(); process.stderr.write(`crawl: ${opts.manifest} line ${b.line}: ${b.error} (skipped)\n`); },
      onProgress: (p) => progress.update(p),
      guardedHosts,
      // Runs on servers of their own cannot see each other's monitors: the later of two with a
      // site in common does not start. Monitors on a shared server (TEMPORAL_ADDRESS) are one
      // per source whoever starts them.
      beforeMonitors: server.external ? undefined : (origins) => {
        registration = RunRegistration.create({ out: path.resolve(opts.outDir), server: server.address }, origins, warn, opts.runsDir);
        const overlap = registration?.earlierOverlap();
        if (overlap) throw new Error(overlapRefusal(overlap));
      },
    }).finally(() => progress.done());
    // A start cut short by Ctrl-C returns what it announced; "crawling 3000 source(s)" then misled.
    if (interrupt.signal || interrupt.failure) throw new Error('interrupted');
    const sources = await sourcesToFollow(client, summary);
    const empty = emptyManifest(summary.sources.size, summary.badLines, opts.manifest);
    if (empty && 'error' in empty) {
      process.stderr.write(`crawl: ${empty.error}\n`);
      return { exitCode: 1, statuses: [], badLines: summary.badLines };
    }
    if (empty) {
      out.write(`${empty.note}\n`);
      return { exitCode: 0, statuses: [], badLines: 0 };
    }
    const duplicates = duplicatesNote(summary);
    out.write((sources.length ? `crawling ${sources.length} source(s) from ${opts.manifest}` : `nothing new to crawl in ${opts.manifest}: every URL was crawled before into this store`) +
      `${summary.badLines ? ` (${summary.badLines} bad line(s) skipped)` : ''}` +
      `${duplicates ? ` (${duplicates})` : ''}; Web UI: ${server.uiUrl ?? 'see your Temporal UI'}\n`);
    if (!deps) out.write(`${noOwnWorkerNote(store, opts.outDir, opts.allowNetworks)}\n`);
    const elsewhere = serverElsewhereNote(server.address, crawlCommandFor(server.address, path.resolve(opts.outDir)));
    if (elsewhere) out.write(`${elsewhere}\n`);
    for (const note of [continuesNote(summary, opts.manifest), grewNote(summary, opts.manifest)]) if (note) out.write(`${note}\n`);
    for (const note of [downloadedBeforeNote(summary), queuedElsewhereNote(summary)]) if (note) out.write(`${note}\n`);
    for (const warning of [...startWarnings(summary), guardedHosts?.warning({ run: path.resolve(opts.outDir) })]) if (warning) process.stderr.write(`crawl: ${warning}\n`);
    const stoppedHere = opts.halted ? await actOnHalted(client, sources, opts.halted, out) : [];
    for (const [name, s] of summary.sources) if (s.alreadyDone) out.write(`  ${name}: ${s.alreadyDone} URL(s) already crawled by an earlier run, skipped\n`);
    const followed = new Set(sources);
    for (const name of summary.sources.keys()) if (!followed.has(name)) out.write(`  ${name}: nothing new to crawl, and no monitor of it on this server\n`);

    let statuses: SourceStatus[] = [];
    const doneRate = new DoneRate();
    // The commands a note suggests, typed in another terminal, must reach this run's server and store.
    const notes = new SourceNotes(crawlCommandFor(server.address, path.resolve(opts.outDir)));
    const behind = new WorkersBehindNotice();
    const networkDown = new NetworkDownNotice();
    const changedSources = new ChangedSources();
    const serverOutage = new ServerOutageNotice(server.address);
    let lastLine = 0;
    let lastDiskCheck = Date.now();
    // A status query waits for a worker to answer it: without one, Ctrl-C must not wait too.
    let roundSignal = interrupt.nextAbortSignal();
    const warnListing = closedListingWarner();
    const poller = new StatusPoller(sources, (s) => sourceStatus(client, s, { signal: roundSignal }), {
      closedSince: (sinceMs) => listClosedSince(client, sinceMs, roundSignal),
      onListingError: (err) => { if (!interrupt.signal) warnListing(err); },
      expectedUrls: (s) => summary.sources.get(s)?.urls,
    });
    while (!interrupt.signal && !interrupt.failure) {
      roundSignal = interrupt.nextAbortSignal();
      // Not waiting for a round that an interrupt cut short: a call to a dead server may not end for ~20 s.
      const round = poller.poll();
      const polled = await Promise.race([round, interrupt.stopped.then(() => undefined)]).catch((err: unknown) => {
        if (interrupt.signal || interrupt.failure || !isServerUnreachable(err)) throw err;
        return err instanceof Error ? err : new Error(String(err));
      });
      if (!polled) {
        round.catch(() => undefined);
        break;
      }
      if (polled instanceof Error) {
        const note = serverOutage.down(Date.now(), polled);
        if (note) out.write(outageLine('down', note, Boolean(out.isTTY)));
        await interrupt.sleep(SERVER_RETRY_MS);
        continue;
      }
      const back = serverOutage.up(Date.now());
      if (back) out.write(outageLine('up', back, Boolean(out.isTTY)));
      statuses = polled;
      const update = monitoringUpdate(statuses, doneRate.baseline());
      // A source that waits or halts says why on a line of its own, once per new reason: with
      // counts alone, a source whose robots.txt cannot be read sat at 0 for minutes unexplained.
      const changed = notes.changed(statuses);
      const behindLine = behind.next(update, Date.now());
      const networkLine = networkDown.next(update);
      let diskNotes: DiskNotice[] = [];
      if (Date.now() - lastDiskCheck >= DISK_CHECK_MS) {
        lastDiskCheck = Date.now();
        diskNotes = disks.check();
      }
      if (out.isTTY) {
        for (const d of diskNotes) out.write(`\r\x1b[Kcrawl: ${d.note}\n`);
        for (const n of changed) out.write(`\r\x1b[K${n.source}: ${n.note}\n`);
        if (behindLine) out.write(`\r\x1b[K${behindLine}\n`);
        if (networkLine) out.write(`\r\x1b[K${networkLine}\n`);
        out.write(`\r\x1b[K${progressBarLine(update.global, out.columns)}`);
      } else {
        for (const d of diskNotes) out.write(`${JSON.stringify({ event: 'disk_space', time: update.time, ...d })}\n`);
        for (const n of changed) out.write(`${JSON.stringify({ event: 'source_note', time: update.time, ...n })}\n`);
        if (behindLine) out.write(`${JSON.stringify({ event: 'workers_behind', time: update.time, sources: update.global.workersBehind, note: behindLine })}\n`);
        if (networkLine) out.write(`${JSON.stringify({ event: 'network_down', time: update.time, sources: update.global.networkDown, note: networkLine })}\n`);
        // The last round's line always: a JSON reader's last monitoring_update is the end state
        // (a source that halted last showed as running in it before, if the run ended within 5 s).
        if (Date.now() - lastLine >= 5_000 || allSettled(statuses)) {
          lastLine = Date.now();
          out.write(`${JSON.stringify(changedSources.line(update))}\n`);
        }
      }
      doneRate.record(Date.now(), update.global.done);
      if (allSettled(statuses)) break;
      await interrupt.sleep(opts.pollMs ?? 1_000);
    }
    if (out.isTTY) out.write('\n');
    if (interrupt.signal || interrupt.failure) throw new Error('interrupted');
    if (statuses.length) out.write(`${statusTable(statuses)}\n`);

    const failures = new FailureTally(new Set(summary.sources.keys()));
    const exported = await exportRecordsToFile(store, metadataFile, [], { inspect: (text) => failures.addText(text) });
    out.write(`metadata: ${metadataFile} (${exported.records} records${supersededNote(exported)}); thumbnails under thumbnails/${deps && keepOriginals ? ', the images themselves under originals/' : ''} in the ${store.description}\n`);
    const hint = opts.againHint ?? true;
    // `crawl again`'s first round, with a second to follow: what is not done yet is its business.
    const interim = hint === 'unless-held' && summary.queuedElsewhere > 0;
    const why = interim ? [] : failures.lines();
    if (why.length) out.write(`not done, by reason (commonest first; every URL's record is in ${path.basename(metadataFile)}):\n${why.map((l) => `  ${l}\n`).join('')}`);
    const again = hint === false || interim ? undefined : againNote(failures, opts.outDir, Boolean(deps));
    if (again) out.write(`${again}\n`);
    const halted = statuses.filter((s) => s.stats?.state === 'halted' && s.workflowStatus === 'RUNNING');
    const failed = statuses.filter((s) => !['RUNNING', 'COMPLETED'].includes(s.workflowStatus));
    for (const h of halted) {
      // With our own server and worker gone when we exit, `crawl resume` would find nobody to
      // run it: the way on is this command again.
      const next = !deps ? `resume with \`crawl resume ${h.source}\` or end it with \`crawl stop ${h.source}\``
        : opts.haltedNext ? opts.haltedNext(h.source)
          : `run this command again with --resume-halted to try them again, or with --stop-halted to end ${h.source} for good`;
      out.write(`HALTED ${h.source}: ${h.stats?.haltReason}. Its URLs are kept; ${next}.\n`);
    }
    for (const f of failed) out.write(`FAILED ${f.source}: monitor ${f.workflowStatus.toLowerCase()}\n`);
    // Stopped while this run followed it (`crawl stop` in another terminal): its other URLs have no
    // record, so the run has not done what it was asked; it said nothing of them and exited 0.
    // Not a source this command's --stop-halted ended: that is what it was asked.
    const stopped = statuses.filter((s) => s.workflowStatus === 'COMPLETED' && s.stats?.state === 'stopped' && !stoppedHere.includes(s.source) && s.stats.urls.finished < s.stats.urls.total);
    for (const s of stopped) {
      const left = s.stats!.urls.total - s.stats!.urls.finished;
      out.write(`STOPPED ${s.source}: stopped by an operator with ${left} of its ${s.stats!.urls.total} URL(s) not crawled (no record yet); run this command again to crawl them.\n`);
    }
    return { exitCode: halted.length || failed.length || stopped.length ? 1 : 0, statuses, badLines: summary.badLines, queuedElsewhere: summary.queuedElsewhere };
  } catch (err) {
    if (interrupt.failure && !interrupt.signal) {
      await stopWorker();
      const result = await serverLost(interrupt.failure, store, metadataFile, out);
      return { ...result, exitNow: true };
    }
    if (!interrupt.signal) throw err;
    // What failed after Ctrl-C (a status query to a server the terminal stopped too) is not news.
    await stopWorker();
    return interrupted(interrupt.signal, store, metadataFile, out);
  } finally {
    registration?.remove();
    interrupt.dispose();
    stopWatching();
    if (workerStopped) {
      await stopWorker();
      // The SDK's runtime ends with its last native connection, and while it runs, forwarding
      // its log lines keeps the process from exiting.
      await workerConnection?.close();
    }
    await server.stop();
  }
}

/** Like an interrupt, with the reason: the records so far are exported, the crawl kept for the next run. */
async function serverLost(reason: string, store: ObjectStore, metadataFile: string, out: NodeJS.WritableStream): Promise<RunResult> {
  process.stderr.write(`crawl: ${reason}. Nothing is lost: run the same command again to continue where this run stopped.\n`);
  try {
    const exported = await exportRecordsToFile(store, metadataFile);
    out.write(`metadata so far: ${metadataFile} (${exported.records} records${supersededNote(exported)})\n`);
  } catch (err) {
    process.stderr.write(`crawl: could not export the records so far: ${(err as Error).message}\n`);
  }
  return { exitCode: 1, statuses: [], badLines: 0, serverLost: true };
}

/**
 * Ctrl-C or SIGTERM while `run` works: noted, so that it stops in order (worker, then server)
 * instead of dying mid-write. A second one ends the process at once.
 */
function watchForInterrupt(): {
  readonly signal: NodeJS.Signals | undefined;
  /** Why the run cannot go on (its server ended), when something other than a signal stops it. */
  readonly failure: string | undefined;
  fail(reason: string): void;
  /** Settles at the first signal or failure. */
  readonly stopped: Promise<void>;
  sleep(ms: number): Promise<void>;
  /**
   * For one round of calls to the server, aborted by the signal. A new one each round: the
   * client adds a listener to it per call, which on one long-lived signal would pile up for hours.
   */
  nextAbortSignal(): AbortSignal;
  dispose(): void;
} {
  let signal: NodeJS.Signals | undefined;
  let failure: string | undefined;
  let wake = () => undefined as void;
  let current = new AbortController();
  let stop = () => undefined as void;
  const stopped = new Promise<void>((resolve) => { stop = resolve; });
  const onSignal = (s: NodeJS.Signals) => {
    if (signal) process.exit(exitCodeOf(s));
    signal = s;
    stop();
    wake();
    current.abort(new Error(`interrupted (${s})`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    get signal() { return signal; },
    get failure() { return failure; },
    stopped,
    fail: (reason) => {
      if (signal || failure) return;
      failure = reason;
      stop();
      wake();
      current.abort(new Error(reason));
    },
    sleep: (ms) => new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => { clearTimeout(timer); resolve(); };
    }),
    nextAbortSignal: () => {
      current = new AbortController();
      // One listener per call in flight on it: with many sources, more than Node's warning level of 10.
      setMaxListeners(0, current.signal);
      if (signal) current.abort(new Error(`interrupted (${signal})`));
      return current.signal;
    },
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

function exitCodeOf(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? 130 : 143;
}

/** The records so far go to metadata.ndjson all the same; the crawl itself is kept for the next run. */
async function interrupted(signal: NodeJS.Signals, store: ObjectStore, metadataFile: string, out: NodeJS.WritableStream): Promise<RunResult> {
  try {
    const exported = await exportRecordsToFile(store, metadataFile);
    out.write(`metadata so far: ${metadataFile} (${exported.records} records${supersededNote(exported)})\n`);
  } catch (err) {
    process.stderr.write(`crawl: could not export the records so far: ${(err as Error).message}\n`);
  }
  process.stderr.write(`crawl: interrupted (${signal}). Nothing is lost: run the same command again to continue where this run stopped.\n`);
  return { exitCode: exitCodeOf(signal), statuses: [], badLines: 0 };
}

/**
 * Against TEMPORAL_ADDRESS the run starts no worker, and the operator's workers must read the
 * URL lists it wrote: a `crawl worker` started beside it with its own CRAWL_DATA_DIR found no
 * chunk and held the source as "store failing" every minute, and the run waited for good. The
 * run's --allow-network opens nothing there either (the guard is the workers'): a worker
 * started without it recorded every URL of a private site as refused.
 */
export function noOwnWorkerNote(store: ObjectStore, outDir: string, allowNetworks: readonly string[] = []): string {
  const how = store instanceof LocalStore ? `start them with --data-dir ${shellWord(path.resolve(outDir))} (or CRAWL_DATA_DIR=${shellWord(path.resolve(outDir))})` : 'give them the same CRAWL_S3_* settings';
  const networks = [...new Set(allowNetworks)];
  const open = networks.length
    ? `; the networks this run was given are theirs to open: ${networks.map((n) => `--allow-network ${shellWord(n)}`).join(' ')} (or CRAWL_ALLOW_NETWORKS=${shellWord(networks.join(','))})`
    : '';
  return `this run starts no worker (TEMPORAL_ADDRESS is set): crawl workers on task queue ${TASK_QUEUE} must use its store, ${store.description}: ${how}${open}`;
}

/** Whether `run` has nothing left to wait for: every monitor has ended or halted (an operator's to decide). */
function allSettled(statuses: readonly SourceStatus[]): boolean {
  return !statuses.some((s) => s.workflowStatus === 'RUNNING' && s.stats?.state !== 'halted');
}

/** Resumes or stops the monitors among `sources` that are halted, saying so for each; returns those. */
export async function actOnHalted(client: Client, sources: string[], action: 'resume' | 'stop', out: NodeJS.WritableStream): Promise<string[]> {
  const acted: string[] = [];
  for (const source of sources) {
    const status = await sourceStatus(client, source);
    if (status.workflowStatus !== 'RUNNING' || status.stats?.state !== 'halted') continue;
    const handle = client.workflow.getHandle(monitorWorkflowId(source));
    if (action === 'resume') {
      await handle.executeUpdate(resumeUpdate, { args: [{}] });
      out.write(`  ${source}: halted by an earlier run (${status.stats.haltReason}); resumed\n`);
    } else {
      await stopMonitor(handle);
      out.write(`  ${source}: halted by an earlier run (${status.stats.haltReason}); stopped for good\n`);
    }
    acted.push(source);
  }
  return acted;
}

/**
 * The sources whose monitors `run` follows: every source of the manifest, except one with
 * nothing new to crawl (its URLs all done before, or downloaded or queued under other manifests
 * into a store this server has not crawled into) and no monitor here to report on it.
 */
export async function sourcesToFollow(client: Client, summary: StartSummary): Promise<string[]> {
  const idle = new Set<string>();
  for (const [name, s] of summary.sources) {
    // Left to another manifest's chunks that finished since this one's first start: none sent.
    if (s.urls === s.alreadyDone + s.downloadedBefore + s.queuedElsewhere && s.chunksOfOthers === 0) idle.add(name);
  }
  const missing = new Set<string>();
  await forEachLimit([...idle], 16, async (name) => {
    try {
      await client.workflow.getHandle(monitorWorkflowId(name)).describe();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      missing.add(name);
    }
  });
  return [...summary.sources.keys()].filter((name) => !missing.has(name));
}
