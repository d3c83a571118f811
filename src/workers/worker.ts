import { decimal } from '../shared/decimal';
import path from 'node:path';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import * as smoke from '../activities/smoke';
import { createCrawlActivities, type CrawlDeps } from '../activities/crawlActivities';
import { ActivitySlots } from './activitySlots';
import { HEARTBEAT_EVERY_MS } from '../shared/heartbeat';
import { helperNiceFromEnv, keepHelperThreadsBelowMain } from '../temporal/priority';
import { heapGrowthFromEnv, setHeapGrowth } from './heapGrowth';
import { StoreRecorder } from '../activities/storeRecorder';
import { pipelineConfigFromEnv, type PipelineConfig } from '../pipeline/config';
import { probeProxy, type ProxySetting } from '../pipeline/proxy';
import { ImagePipeline } from '../pipeline/imagePipeline';
import { Spool } from '../pipeline/spool';
import { GrantJournal } from '../activities/grantJournal';
import { DecodeCrashGuard } from '../pipeline/decodeCrashGuard';
import { LocalStore, storeFromEnv } from '../pipeline/store';
import type { WatchedDir } from '../shared/diskRoom';
import { DEFAULT_NAMESPACE, TASK_QUEUE } from '../temporal/connect';
import { log } from '../shared/log';
import { activitiesWithinFiles, openFilesLimit } from '../shared/openFiles';
import { workflowCodeOption } from './workflowBundle';
import { envText } from '../shared/env';
import { crawlMetrics } from '../activities/crawlMetrics';
import { servesMetrics } from '../temporal/runtime';

export interface CrawlWorkerOptions {
  connection: NativeConnection;
  taskQueue?: string;
  /** Dependencies of the crawl activities; defaults come from the environment. */
  deps?: CrawlDeps;
  overrides?: Partial<WorkerOptions>;
}

// workflowsPath works both from src (ts, via the SDK's bundler) and from dist (js).
export const WORKFLOWS_PATH = require.resolve('../workflows');

export interface DepsOptions {
  dataDir?: string;
  /** Added to CRAWL_ALLOW_NETWORKS (e.g. from repeated --allow-network). */
  allowNetworks?: string[];
  /**
   * Settings that replace the environment's: `crawl run` gives those its store's run settings
   * keep (originals, the perceptual hash, how thumbnails are made).
   */
  config?: Partial<Omit<PipelineConfig, 'allowNetworks'>>;
}

/** Where a worker keeps its spool (and, by default, its local store). */
export function dataDirFromEnv(): string {
  return envText('CRAWL_DATA_DIR') ?? path.resolve('.crawl-data');
}

/** The directories on local disks that a worker writes images and records to: watched for room. */
export function workerDiskDirs(deps: CrawlDeps, dataDir = dataDirFromEnv()): WatchedDir[] {
  return [
    ...(deps.store instanceof LocalStore ? [{ dir: deps.store.root, what: 'the store' }] : []),
    { dir: path.join(dataDir, 'spool'), what: 'the spool' },
  ];
}

/** The real pipeline: guarded fetcher, robots.txt, sharp, the configured store. */
export function defaultDeps(opts: DepsOptions = {}): CrawlDeps {
  const dataDir = opts.dataDir ?? dataDirFromEnv();
  const store = storeFromEnv(dataDir);
  const base = pipelineConfigFromEnv(opts.config);
  const cfg: PipelineConfig = { ...base, allowNetworks: [...base.allowNetworks, ...(opts.allowNetworks ?? [])] };
  logProxy(cfg.proxy, cfg.connectTimeoutMs);
  const metrics = servesMetrics() ? crawlMetrics(Runtime.instance().metricMeter) : undefined;
  return {
    processor: new ImagePipeline(cfg, store, new Spool(path.join(dataDir, 'spool')), metrics ? { onResend: () => metrics.resent() } : undefined,
      new DecodeCrashGuard(path.join(dataDir, 'decoding'))),
    recorder: new StoreRecorder(store),
    store,
    journal: new GrantJournal(path.join(dataDir, 'journal')),
    ...(metrics ? { metrics } : {}),
  };
}

/**
 * Says which way the worker's requests leave. HTTPS_PROXY and its kin are not followed (a crawl's
 * network guard must judge every site's address, which a proxy found from those variables, with
 * their NO_PROXY lists, would not allow for), so a worker where they are set says it connects
 * directly: an operator behind a proxy learns why sites time out, and what to set.
 */
function logProxy(proxy: ProxySetting | undefined, timeoutMs: number): void {
  if (proxy) {
    log.info({ event: 'proxy', proxy: proxy.shown }, `requests to sites go through the proxy ${proxy.shown} (CRAWL_PROXY), each connection a tunnel to the address the network guard allowed`);
    void probeProxy(proxy, timeoutMs).then((why) => {
      if (why) log.warn({ event: 'proxy-unreachable', proxy: proxy.shown, error: why }, `cannot reach the proxy ${proxy.shown} (CRAWL_PROXY): ${why}; no site can be reached until it can (is its host and port right?)`);
    });
    return;
  }
  const variable = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'].find((v) => process.env[v]?.trim());
  if (variable) {
    log.warn({ event: 'proxy-variable-unused', variable },
      `${variable} is set, but the crawler connects to sites directly: set CRAWL_PROXY=http://host:port (with user:password@ if the proxy asks) to send its requests through that proxy`);
  }
}

/** Thread priorities and heap growth for a process that crawls (see each for why). */
export function tuneWorkerProcess(): void {
  keepHelperThreadsBelowMain(helperNiceFromEnv());
  setHeapGrowth(heapGrowthFromEnv());
}

/** One process type runs workflows and activities; scale by running more of them. */
export function createCrawlWorker(opts: CrawlWorkerOptions): Promise<Worker> {
  const deps = opts.deps ?? defaultDeps();
  tuneWorkerProcess();
  const fitted = activitiesWithinFiles(maxActivitiesFromEnv(), openFilesLimit());
  if (fitted.note) log.warn({ event: 'open-files-limit', activities: fitted.activities }, fitted.note);
  return Worker.create({
    connection: opts.connection,
    namespace: DEFAULT_NAMESPACE,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    ...workflowCodeOption(WORKFLOWS_PATH, log),
    activities: { ...smoke, ...createCrawlActivities(deps) },
    tuner: {
      // The SDK's defaults for the other kinds (what it uses without a tuner).
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 40 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
      // A fetch activity spends most of its life waiting for its slots, one per source and grant
      // at a time: the SDK's default of 100 would leave sources beyond the hundredth unserved.
      // Held back while the worker's own network is down (activitySlots.ts).
      activityTaskSlotSupplier: new ActivitySlots(fitted.activities, deps.processor.network),
    },
    // Heartbeats go out as often as the activity beats, not at 80% of the timeout.
    maxHeartbeatThrottleInterval: HEARTBEAT_EVERY_MS,
    ...opts.overrides,
  });
}

/** Throws on a bad worker setting (activities, thread priority, heap growth) or too few open files, without applying any. */
export function checkWorkerConfig(): void {
  activitiesWithinFiles(maxActivitiesFromEnv(), openFilesLimit());
  helperNiceFromEnv();
  heapGrowthFromEnv();
}

/** CRAWL_MAX_ACTIVITIES: fetch activities one worker runs at once (default 1000). */
export function maxActivitiesFromEnv(): number {
  const raw = process.env.CRAWL_MAX_ACTIVITIES;
  if (raw === undefined || raw === '') return 1000;
  const n = decimal(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`CRAWL_MAX_ACTIVITIES must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}
