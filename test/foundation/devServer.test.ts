import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLocalEnv } from '../support/temporal';
import { createCrawlWorker } from '../../src/workers/worker';
import { CRAWL_STATE } from '../../src/temporal/searchAttributes';

describe('local dev server (pinned temporal CLI) with a real worker', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => { env = await createLocalEnv(); });
  afterAll(async () => { await env?.teardown(); });

  it('runs the smoke workflow through a real worker and activity', async () => {
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue: 'dev-server-smoke' });
    const result = await worker.runUntil(
      env.client.workflow.execute('smokeWorkflow', {
        taskQueue: 'dev-server-smoke',
        workflowId: 'smoke-dev',
        args: ['dev', 10],
        typedSearchAttributes: [{ key: CRAWL_STATE, value: 'smoke' }],
      }),
    );
    expect(result.greeting).toMatch(/^hello dev from .+ \(node v\d+/);
    expect(result.sleptMs).toBeGreaterThanOrEqual(10);
    const described = await env.client.workflow.getHandle('smoke-dev').describe();
    expect(described.typedSearchAttributes.get(CRAWL_STATE)).toBe('smoke');
  });
});
