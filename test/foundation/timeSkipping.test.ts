import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv } from '../support/temporal';
import { WORKFLOWS_PATH } from '../../src/workers/worker';
import * as activities from '../../src/activities/smoke';

describe('time-skipping test server (pinned binary)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => { env = await createTimeSkippingEnv(); });
  afterAll(async () => { await env?.teardown(); });

  it('lets an hour of workflow time pass in seconds of wall time', async () => {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'time-skipping',
      workflowsPath: WORKFLOWS_PATH,
      activities,
    });
    const hour = 60 * 60 * 1000;
    const started = Date.now();
    const result = await worker.runUntil(
      env.client.workflow.execute('smokeWorkflow', { taskQueue: 'time-skipping', workflowId: 'sleep-an-hour', args: ['ts', hour] }),
    );
    const wallMs = Date.now() - started;
    expect(result.sleptMs).toBeGreaterThanOrEqual(hour);
    expect(result.greeting).toMatch(/^hello ts from /);
    // Typically under a second; the bound leaves room for a loaded CI machine and still rules out
    // real sleeping by a factor of hundreds.
    expect(wallMs).toBeLessThan(10_000);
  });
});
