import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Origin } from '../../src/demo/origin';
import { resolveTool } from '../../src/temporal/tools';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { TestWorkflowEnvironment as Env } from '@temporalio/testing';
import { createLocalEnv } from '../support/temporal';
import { ROOT, started } from '../support/cli';
import { imageOrigin } from '../support/origin';

const README = path.join(ROOT, 'README.md');

/** The README's block of Temporal CLI commands, as an operator would paste it. */
function readmeCommands(): string {
  const text = fs.readFileSync(README, 'utf8');
  const section = text.slice(text.indexOf('## The same operations with the Temporal CLI'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README: no sh block under "The same operations with the Temporal CLI"');
  return block[1]!;
}

const bash = (script: string, env: NodeJS.ProcessEnv) => started('bash', ['-c', `set -euo pipefail\n${script}`], env).done;

describe("the README's Temporal CLI commands (local dev server, real worker, loopback origin)", () => {
  let env: TestWorkflowEnvironment;
  let origin: Origin;
  beforeAll(async () => {
    env = await createLocalEnv();
    origin = await imageOrigin();
  });
  afterAll(async () => {
    await origin?.stop();
    await env?.teardown();
  });

  it('start, add work three ways, query, pause, resume, re-rate and stop a monitor, as written', async () => {
    const commands = readmeCommands();
    // The one change an operator makes: their own site for the example's.
    expect(commands).toContain('https://museum.example/');
    const script = commands.replaceAll('https://museum.example/', `http://127.0.0.1:${origin.port}/`);
    const cli = resolveTool('temporal');
    if (!cli) throw new Error('the pinned temporal CLI is needed: make setup');
    const worker = await createCrawlWorker({
      connection: env.nativeConnection,
      deps: defaultDeps({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cli-')), allowNetworks: ['127.0.0.0/8'] }),
    });
    await worker.runUntil(async () => {
      const run = await bash(script, { PATH: `${path.dirname(cli)}:${process.env.PATH}`, TEMPORAL_ADDRESS: env.address });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      // The query came after all three chunks were added.
      expect(run.stdout).toMatch(/QueryResult\s+\{.*"source":"museum".*"urls":\{[^}]*"total":3/);
      const answers = [...run.stdout.matchAll(/^\s*Result\s+(.+)$/gm)].map((m) => m[1]);
      expect(answers).toEqual(['paused', 'running', 'target 5/s', 'global ceiling 3/s, target 3/s', 'longest Retry-After honoured set to 120 s (was 3600 s)', 'at most 2 requests open at once (was none)', 'stopped']);
      const final = (await env.client.workflow.getHandle(monitorWorkflowId('museum')).result()) as MonitorStats;
      expect(final).toMatchObject({ state: 'stopped', target: 3, burst: 1, maxConnections: 2, urls: { total: 3 } });
    });
  });
});

describe('crawl start on a server no crawl worker has used yet', () => {
  it('registers the search attributes its monitors start with, instead of failing with "Failed to signalWithStart Workflow"', async () => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    const cli = resolveTool('temporal');
    // A plain dev server, as `temporal server start-dev` or a new namespace gives: no CrawlState.
    const plain = await Env.createLocal({ server: { executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' }, ip: '127.0.0.1' } });
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plain-server-'));
      fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://127.0.0.1:9/a.jpg\n');
      const run = await bash(`node ${ROOT}/bin/crawl start ${dir}/urls.txt --data-dir ${dir}/data`, { TEMPORAL_ADDRESS: plain.address });
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 0, stdout: '127.0.0.1:9: 1 URLs in 1 chunk(s)\n' });
      const description = await plain.client.workflow.getHandle(monitorWorkflowId('127.0.0.1:9')).describe();
      expect(description.status.name).toBe('RUNNING');
      await plain.client.workflow.getHandle(monitorWorkflowId('127.0.0.1:9')).terminate('test over');
    } finally {
      await plain.teardown();
    }
  });
});
