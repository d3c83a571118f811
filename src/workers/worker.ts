import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import * as activities from '../activities';
import { DEFAULT_NAMESPACE, TASK_QUEUE } from '../temporal/connect';

export interface CrawlWorkerOptions {
  connection: NativeConnection;
  taskQueue?: string;
  /** Extra activities (tests inject stubs) merged over the real ones. */
  activities?: Record<string, (...args: never[]) => unknown>;
  overrides?: Partial<WorkerOptions>;
}

// workflowsPath works both from src (ts, via the SDK's bundler) and from dist (js).
export const WORKFLOWS_PATH = require.resolve('../workflows');

/** One process type runs workflows and activities; scale by running more of them. */
export function createCrawlWorker(opts: CrawlWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: DEFAULT_NAMESPACE,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: { ...activities, ...(opts.activities ?? {}) },
    ...opts.overrides,
  });
}
