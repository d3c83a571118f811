import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes';
import { resolveTool } from '../../src/temporal/tools';
import { ensureSearchAttributes } from '../../src/temporal/connect';

// The one place tests get a Temporal server: always the project's pinned binaries, so the
// SDK never tries to download a server (these machines have no internet).

/**
 * The SDK picks the servers' ports as free and the server binds them later: another process can
 * take one in between (a CI run failed on that once with our own server). A few attempts.
 */
async function withRetries<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts) throw err;
      console.warn(`test server did not start (attempt ${attempt} of ${attempts}): ${String(err)}`);
    }
  }
}

export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = resolveTool('temporal-test-server');
  const env = await withRetries(() => TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: path ? { type: 'existing-path', path } : { type: 'cached-download' } },
  }));
  // The monitor upserts typed search attributes; the test server must know them first.
  await ensureSearchAttributes(env.client);
  return env;
}

export function createLocalEnv(): Promise<TestWorkflowEnvironment> {
  const path = resolveTool('temporal');
  return withRetries(() => TestWorkflowEnvironment.createLocal({
    server: {
      executable: path ? { type: 'existing-path', path } : { type: 'cached-download' },
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      ip: '127.0.0.1',
    },
  }));
}
