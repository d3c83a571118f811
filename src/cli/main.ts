import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { log } from '../shared/log';
import { ensureTemporalServer } from '../temporal/devServer';
import { connectClient, connectWorker, ensureSearchAttributes, TASK_QUEUE } from '../temporal/connect';
import { createCrawlWorker } from '../workers/worker';
import { installTemporalRuntime } from '../temporal/runtime';

const DEFAULT_DATA_DIR = process.env.CRAWL_DATA_DIR ?? path.resolve('.crawl-data');

function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError('must be a port number 1-65535');
  return n;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

export function buildProgram(): Command {
  const program = new Command('crawl')
    .description('A polite image crawler on Temporal')
    .showHelpAfterError('(run `crawl --help` for usage)');

  program
    .command('dev-server')
    .description('start the embedded Temporal server (SQLite under --data-dir, Web UI) and keep it running')
    .option('--data-dir <dir>', 'where the SQLite file and server log live', DEFAULT_DATA_DIR)
    .option('--port <port>', 'gRPC port', parsePort, 7233)
    .option('--ui-port <port>', 'Web UI port', parsePort, 8233)
    .action(async (opts: { dataDir: string; port: number; uiPort: number }) => {
      const server = await ensureTemporalServer({ dataDir: opts.dataDir, port: opts.port, uiPort: opts.uiPort });
      const client = await connectClient(server.address);
      await ensureSearchAttributes(client);
      await client.connection.close();
      process.stdout.write(`Temporal server at ${server.address}${server.uiUrl ? `, Web UI at ${server.uiUrl}` : ''}. Ctrl-C stops it.\n`);
      if (!server.owned) return;
      await untilSignal();
      await server.stop();
    });

  program
    .command('worker')
    .description('run a crawler worker (workflows and activities) against TEMPORAL_ADDRESS')
    .option('--task-queue <name>', 'task queue', TASK_QUEUE)
    .action(async (opts: { taskQueue: string }) => {
      const client = await connectClient();
      await ensureSearchAttributes(client);
      await client.connection.close();
      const connection = await connectWorker();
      const worker = await createCrawlWorker({ connection, taskQueue: opts.taskQueue });
      log.info({ event: 'worker.start', taskQueue: opts.taskQueue }, 'worker running');
      const running = worker.run();
      await Promise.race([untilSignal().then(() => worker.shutdown()), running]);
      await running;
      await connection.close();
    });

  program
    .command('demo')
    .description('start the embedded server and a worker, run the smoke workflow, and exit')
    .option('--data-dir <dir>', 'data directory', DEFAULT_DATA_DIR)
    .action(async (opts: { dataDir: string }) => {
      const server = await ensureTemporalServer({ dataDir: opts.dataDir });
      try {
        const client = await connectClient(server.address);
        await ensureSearchAttributes(client);
        const connection = await connectWorker(server.address);
        const worker = await createCrawlWorker({ connection });
        const result = await worker.runUntil(
          client.workflow.execute('smokeWorkflow', {
            taskQueue: TASK_QUEUE,
            workflowId: `smoke-${Date.now()}`,
            args: ['crawler', 2000],
          }),
        );
        process.stdout.write(`${JSON.stringify(result)}\n`);
        if (server.uiUrl) process.stdout.write(`Web UI: ${server.uiUrl}\n`);
        await connection.close();
        await client.connection.close();
      } finally {
        await server.stop();
      }
    });

  return program;
}

export async function main(argv: string[]): Promise<void> {
  installTemporalRuntime();
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    process.stderr.write(`crawl: ${(err as Error).message}\n`);
    process.exitCode = process.exitCode || 1;
  }
}

if (require.main === module) void main(process.argv);
