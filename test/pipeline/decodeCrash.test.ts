import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { clearSourceBlocks } from '../../src/activities/sourceBlocks';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { DecodeCrashGuard } from '../../src/pipeline/decodeCrashGuard';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { FetchBatchResult } from '../../src/shared/types';
import { png } from '../support/images';
import { Origin } from '../support/origin';
import { readRecords } from '../support/records';

describe('an image whose decoding killed workers (real undici, sharp, origin on 127.0.0.1)', () => {
  beforeEach(() => clearSourceBlocks());

  it('is not decoded again once two workers on this machine died decoding it; one death is not enough, and the rest of the grant goes on', async () => {
    const [poison, other, once] = await Promise.all([png(64, 48), png(80, 60), png(32, 24)]);
    const origin = await new Origin().serve('/poison.png', poison, 'image/png').serve('/other.png', other, 'image/png').serve('/once.png', once, 'image/png').start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-decode-crash-'));
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    // Two dead workers of this host: both were decoding the poison, one of them `once` too.
    const guardDir = path.join(dir, 'decoding');
    fs.mkdirSync(guardDir);
    fs.writeFileSync(path.join(guardDir, `${os.hostname()}-999991-0000abcd.log`), `S ${sha(poison)}\nS ${sha(once)}\n`);
    fs.writeFileSync(path.join(guardDir, `${os.hostname()}-999992-0000abcd.log`), `S ${sha(poison)}\n`);
    const store = new LocalStore(path.join(dir, 'store'));
    const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')), undefined,
      new DecodeCrashGuard(guardDir, (pid) => pid !== 999_991 && pid !== 999_992));
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    const paths = ['/poison.png', '/other.png', '/once.png'];
    const startMs = Date.now() + 50;
    try {
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'crash', batchId: 'b', grantId: 1, maxAttempts: 3,
        items: paths.map((p) => ({ url: origin.url(p), attempt: 1 })),
        schedule: { startMs, endMs: startMs + 12 * 60, intervalMs: 60, burstSlots: 0 },
      })) as FetchBatchResult;
      const by = new Map(result.outcomes.map((o) => [new URL(o.url).pathname, o]));
      expect(by.get('/poison.png')).toMatchObject({
        cls: 'content', final: true,
        reason: `a worker on this machine died 2 times while decoding this image (sha256 ${sha(poison).slice(0, 12)}: a crash of the image decoder, or its memory), so it is not decoded again`,
      });
      expect(by.get('/other.png')).toMatchObject({ cls: 'done' });
      expect(by.get('/once.png')).toMatchObject({ cls: 'done' });
      const records = new Map(readRecords(dir).map((r) => [new URL(String(r.url)).pathname, r]));
      expect(records.get('/poison.png')).toMatchObject({ outcome: 'content', reason: expect.stringMatching(/^a worker on this machine died 2 times while decoding this image/) });
      expect(records.get('/poison.png')).not.toHaveProperty('width');
      // Which file it was, for whoever looks into the crash: its size and whole hash.
      expect(records.get('/poison.png')).toMatchObject({ bytes: poison.length, sha256: sha(poison) });
      expect(records.get('/once.png')).toMatchObject({ outcome: 'done', width: 32, height: 24 });
    } finally {
      await pipeline.robots.settled();
      await pipeline.close();
      await origin.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
