import { LocalStore, type ObjectStore } from '../pipeline/store';
import { TASK_QUEUE } from '../temporal/connect';
import { noOwnWorkerNote } from './run';

describe('what `crawl run` against TEMPORAL_ADDRESS tells its operator about the workers', () => {
  const local = new LocalStore('/data/out/store');

  it('names the store to start the workers on, and nothing about networks when the run opened none', () => {
    expect(noOwnWorkerNote(local, '/data/out')).toBe(
      `this run starts no worker (TEMPORAL_ADDRESS is set): crawl workers on task queue ${TASK_QUEUE} must use its store, local directory /data/out/store: start them with --data-dir /data/out (or CRAWL_DATA_DIR=/data/out)`);
  });

  it('hands the workers the networks the run was given, each once, quoted for a shell', () => {
    // The run's own flag reaches no worker of another server: without the workers' own, every
    // URL of a private site was recorded as refused.
    const note = noOwnWorkerNote(local, '/data/out', ['127.0.0.0/8', 'intranet host', '127.0.0.0/8']);
    expect(note).toMatch(/: start them with --data-dir \/data\/out \(or CRAWL_DATA_DIR=\/data\/out\); the networks this run was given are theirs to open: /);
    expect(note.endsWith(`--allow-network 127.0.0.0/8 --allow-network 'intranet host' (or CRAWL_ALLOW_NETWORKS='127.0.0.0/8,intranet host')`)).toBe(true);
  });

  it('points workers of an S3 store at the same S3 settings', () => {
    const s3 = { description: 'S3 bucket crawl (prefix p/)' } as ObjectStore;
    expect(noOwnWorkerNote(s3, '/data/out', ['10.0.0.0/8'])).toBe(
      `this run starts no worker (TEMPORAL_ADDRESS is set): crawl workers on task queue ${TASK_QUEUE} must use its store, S3 bucket crawl (prefix p/): ` +
      'give them the same CRAWL_S3_* settings; the networks this run was given are theirs to open: --allow-network 10.0.0.0/8 (or CRAWL_ALLOW_NETWORKS=10.0.0.0/8)');
  });
});
