import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sourcesToFollow } from '../../src/crawl/run';
import type { StartSummary } from '../../src/crawl/start';
import { monitorWorkflowId } from '../../src/workflows/monitorState';

describe('sourcesToFollow (crawl run)', () => {
  it('drops a source with nothing new to crawl only when this server has no monitor of it', async () => {
    const summary = {
      sources: new Map([
        ['all-done', { urls: 3, chunks: 1, alreadyDone: 3, downloadedBefore: 0, queuedElsewhere: 0, chunksOfOthers: 0 }],
        ['all-downloaded', { urls: 2, chunks: 0, alreadyDone: 0, downloadedBefore: 2, queuedElsewhere: 0, chunksOfOthers: 0 }],
        ['both', { urls: 4, chunks: 1, alreadyDone: 1, downloadedBefore: 3, queuedElsewhere: 0, chunksOfOthers: 0 }],
        // Left to another manifest's chunks, finished by now (none sent), or not (sent with it).
        ['queued-finished', { urls: 4, chunks: 1, alreadyDone: 1, downloadedBefore: 1, queuedElsewhere: 2, chunksOfOthers: 0 }],
        ['queued-sent', { urls: 2, chunks: 0, alreadyDone: 0, downloadedBefore: 0, queuedElsewhere: 2, chunksOfOthers: 1 }],
        ['new-work', { urls: 5, chunks: 1, alreadyDone: 1, downloadedBefore: 1, queuedElsewhere: 0, chunksOfOthers: 0 }],
        ['idle-with-monitor', { urls: 1, chunks: 1, alreadyDone: 1, downloadedBefore: 0, queuedElsewhere: 0, chunksOfOthers: 0 }],
      ]),
    } as unknown as StartSummary;
    const described: string[] = [];
    const client = {
      workflow: {
        getHandle: (id: string) => ({
          describe: async () => {
            described.push(id);
            if (id !== monitorWorkflowId('idle-with-monitor')) throw new WorkflowNotFoundError('not found', id, undefined);
            return {};
          },
        }),
      },
    } as unknown as Client;
    expect(await sourcesToFollow(client, summary)).toEqual(['queued-sent', 'new-work', 'idle-with-monitor']);
    // A source with work to do is followed without asking: its monitor was just signalled.
    expect(described.sort()).toEqual(['all-done', 'all-downloaded', 'both', 'queued-finished', 'idle-with-monitor'].map(monitorWorkflowId).sort());
  });

  it('fails on any other error than a missing monitor, rather than hide a source', async () => {
    const summary = { sources: new Map([['s', { urls: 1, chunks: 1, alreadyDone: 1, downloadedBefore: 0, queuedElsewhere: 0, chunksOfOthers: 0 }]]) } as unknown as StartSummary;
    const client = { workflow: { getHandle: () => ({ describe: async () => { throw new Error('connection refused'); } }) } } as unknown as Client;
    await expect(sourcesToFollow(client, summary)).rejects.toThrow('connection refused');
  });
});
