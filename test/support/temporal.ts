import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes';
import { resolveTool } from '../../src/temporal/tools';
import { ensureSearchAttributes } from '../../src/temporal/connect';

// The one place tests get a Temporal server: always the project's pinned binaries, so the
// SDK never tries to download a server (these machines have no internet).

export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = resolveTool('temporal-test-server');
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: path ? { type: 'existing-path', path } : { type: 'cached-download' } },
  });
  // The monitor upserts typed search attributes; the test server must know them first.
  await ensureSearchAttributes(env.client);
  return env;
}

export function createLocalEnv(): Promise<TestWorkflowEnvironment> {
  const path = resolveTool('temporal');
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: path ? { type: 'existing-path', path } : { type: 'cached-download' },
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      ip: '127.0.0.1',
    },
  });
}
