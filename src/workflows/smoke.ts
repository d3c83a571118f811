import { proxyActivities, sleep } from '@temporalio/workflow';
import type * as activities from '../activities/smoke';

const { describeEnvironment } = proxyActivities<typeof activities>({ startToCloseTimeout: '10 seconds' });

export interface SmokeResult {
  greeting: string;
  /** Workflow time that passed during the durable sleep, in ms. */
  sleptMs: number;
}

/** Proves the chain server -> worker -> workflow timer -> activity end to end. */
export async function smokeWorkflow(name: string, sleepMs: number): Promise<SmokeResult> {
  const before = Date.now();
  await sleep(sleepMs);
  const sleptMs = Date.now() - before;
  const greeting = await describeEnvironment(name);
  return { greeting, sleptMs };
}
