import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureTemporalServer, freePort } from '../../src/temporal/devServer';
import { listensOn } from '../../src/temporal/listeningProcess';
import { createLocalEnv } from '../support/temporal';
import { createCrawlWorker } from '../../src/workers/worker';
import { CRAWL_STATE } from '../../src/temporal/searchAttributes';
import { resolveTool } from '../../src/temporal/tools';
import { runCli, started } from '../support/cli';

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

  it('starts a server of its own when another data directory\'s server holds the port, finds a data directory\'s running server again, and takes it over when its starter died', async () => {
    const saved = process.env.TEMPORAL_ADDRESS;
    delete process.env.TEMPORAL_ADDRESS;
    const [a, b] = [fs.mkdtempSync(path.join(os.tmpdir(), 'server-a-')), fs.mkdtempSync(path.join(os.tmpdir(), 'server-b-'))];
    const [port, uiPort] = [await freePort(), await freePort()];
    // Another process may bind a port freePort() found free before this server does: it may move.
    const first = await ensureTemporalServer({ dataDir: a, port, uiPort, ifPortTaken: 'another' });
    try {
      expect(first.owned).toBe(true);
      // Another crawl run, another output directory: not the first one's server.
      const second = await ensureTemporalServer({ dataDir: b, port, uiPort, ifPortTaken: 'another' });
      try {
        expect(second.owned).toBe(true);
        expect(second.address).not.toBe(first.address);
      } finally {
        await second.stop();
      }
      // The first directory again (its process outlived a run): its server, not a second one on the same SQLite file.
      const again = await ensureTemporalServer({ dataDir: a, port: await freePort(), ifPortTaken: 'another' });
      expect(again).toMatchObject({ owned: false, address: first.address });
      // Another process's run, still crawling: it stops the server when it ends, so a second run
      // over the same directory is refused (before, that run failed part-way with ECONNREFUSED);
      // `crawl dev-server` (local) uses it as before.
      const marker = JSON.parse(fs.readFileSync(path.join(a, 'server.json'), 'utf8'));
      expect(marker.endsWithOwner).toBe(true);
      fs.writeFileSync(path.join(a, 'server.json'), JSON.stringify({ ...marker, ownerPid: process.ppid }));
      await expect(ensureTemporalServer({ dataDir: a, port: await freePort(), ifPortTaken: 'another' }))
        .rejects.toThrow(`another crawl (pid ${process.ppid}) is running on the Temporal server of ${a} (${first.address}), which it stops when it ends: wait for it to finish`);
      expect(await ensureTemporalServer({ dataDir: a, port: await freePort(), local: true })).toMatchObject({ owned: false, address: first.address });
      // Its starter died (a run killed with SIGKILL): the next run takes the server over and stops it when done.
      const dead = spawnSync(process.execPath, ['-e', '']).pid!;
      fs.writeFileSync(path.join(a, 'server.json'), JSON.stringify({ ...marker, ownerPid: dead }));
      const orphan = await ensureTemporalServer({ dataDir: a, port: await freePort(), ifPortTaken: 'another' });
      expect(orphan).toMatchObject({ owned: true, address: first.address });
      await orphan.stop();
      // stop() returns once the server has ended (a zombie until this test process, which
      // started it, reaps it) or right after a SIGKILL when it took longer than 10 s: either way
      // kill(pid, 0) may find it for a moment (one full CI run in session 34).
      const gone = () => { try { process.kill(marker.pid, 0); return false; } catch { return true; } };
      for (let waited = 0; waited < 5_000 && !gone(); waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(gone()).toBe(true);
    } finally {
      await first.stop();
      if (saved !== undefined) process.env.TEMPORAL_ADDRESS = saved;
    }
    expect(fs.existsSync(path.join(a, 'server.json'))).toBe(false);
  });

  it('leaves, as it stops, a marker written since for another server over its directory', async () => {
    const saved = process.env.TEMPORAL_ADDRESS;
    delete process.env.TEMPORAL_ADDRESS;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-marker-'));
    const server = await ensureTemporalServer({ dataDir: dir, port: await freePort(), ifPortTaken: 'another' });
    // As when this server died under its run and a new one started over the directory before the run ended.
    const newer = { ...JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8')), pid: process.pid, ownerPid: process.pid };
    fs.writeFileSync(path.join(dir, 'server.json'), JSON.stringify(newer));
    try {
      await server.stop();
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8'))).toEqual(newer);
    } finally {
      if (saved !== undefined) process.env.TEMPORAL_ADDRESS = saved;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('moves to a free UI port when its UI port is taken as it starts, and names the taken port when the operator chose it', async () => {
    const saved = process.env.TEMPORAL_ADDRESS;
    delete process.env.TEMPORAL_ADDRESS;
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const held = (holder.address() as net.AddressInfo).port;
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-ui-'));
      await expect(ensureTemporalServer({ dataDir: dir, port: await freePort(), uiPort: held }))
        .rejects.toThrow(new RegExp(`UI port ${held}.*address already in use.*--ui-port`));
      expect(fs.existsSync(path.join(dir, 'server.json'))).toBe(false);
      const moved = await ensureTemporalServer({ dataDir: dir, port: await freePort(), uiPort: held, ifPortTaken: 'another' });
      try {
        expect(moved.owned).toBe(true);
        expect(moved.uiUrl).not.toBe(`http://127.0.0.1:${held}`);
        expect(moved.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      } finally {
        await moved.stop();
      }
    } finally {
      holder.close();
      if (saved !== undefined) process.env.TEMPORAL_ADDRESS = saved;
    }
  });

  it('moves to free ports when another server takes its port as it starts, instead of taking that server for its own', async () => {
    const saved = { address: process.env.TEMPORAL_ADDRESS, cli: process.env.TEMPORAL_CLI_PATH };
    delete process.env.TEMPORAL_ADDRESS;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-race-'));
    const port = await freePort();
    const starts = path.join(dir, 'starts');
    const otherPid = path.join(dir, 'other.pid');
    const real = resolveTool('temporal')!;
    // Two runs started in the same second both found the port free. First start: the other run's
    // server has it and answers there, and ours has not bound it (a process that never will).
    // Second: ours fails to bind, as the real server does (an error line, then a Go panic). Then
    // the real CLI.
    const wrapper = path.join(dir, 'temporal');
    fs.writeFileSync(wrapper, [
      '#!/bin/bash',
      `n=$(cat "${starts}" 2>/dev/null || echo 0); echo $((n + 1)) > "${starts}"`,
      'if [ "$n" = 0 ]; then',
      `  "${real}" server start-dev --ip 127.0.0.1 --port ${port} --ui-port ${await freePort()} --db-filename "${dir}/other.sqlite" --log-level error > "${dir}/other.log" 2>&1 &`,
      `  echo $! > "${otherPid}"`,
      `  for i in $(seq 300); do "${real}" operator cluster health --address 127.0.0.1:${port} > /dev/null 2>&1 && break; sleep 0.1; done`,
      '  exec sleep 60',
      'elif [ "$n" = 1 ]; then',
      `  echo '{"level":"ERROR","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:${port}: bind: address already in use","service":"frontend"}'`,
      '  echo "panic: runtime error: invalid memory address or nil pointer dereference" >&2; exit 2',
      'fi',
      `exec "${real}" "$@"`,
    ].join('\n'), { mode: 0o755 });
    process.env.TEMPORAL_CLI_PATH = wrapper;
    try {
      const server = await ensureTemporalServer({ dataDir: path.join(dir, 'mine'), port, uiPort: await freePort(), ifPortTaken: 'another' });
      try {
        // Before: the first start took the other server, answering on the port, for its own.
        expect(server.address).not.toBe(`127.0.0.1:${port}`);
        // Three starts; a fourth when a port picked as free is taken before the real server binds
        // it (seen once in CI: the third start's own frontend port, then a start on new ports).
        expect(Number(fs.readFileSync(starts, 'utf8').trim())).toBeGreaterThanOrEqual(3);
        expect(Number(fs.readFileSync(starts, 'utf8').trim())).toBeLessThanOrEqual(4);
        const marker = JSON.parse(fs.readFileSync(path.join(dir, 'mine', 'server.json'), 'utf8')) as { pid: number; port: number };
        expect(listensOn(marker.pid, marker.port)).not.toBe(false);
      } finally {
        await server.stop();
      }
    } finally {
      if (fs.existsSync(otherPid)) process.kill(Number(fs.readFileSync(otherPid, 'utf8')), 'SIGKILL');
      for (const [k, v] of [['TEMPORAL_ADDRESS', saved.address], ['TEMPORAL_CLI_PATH', saved.cli]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('starts the server once more when it exits before it is ready, and names a Go panic when it does so again', async () => {
    const saved = { address: process.env.TEMPORAL_ADDRESS, cli: process.env.TEMPORAL_CLI_PATH };
    delete process.env.TEMPORAL_ADDRESS;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-panic-'));
    const starts = path.join(dir, 'starts');
    // The real CLI, after as many panics (exit code 2) as the file `panics` says (the server
    // process gets Node's own environment, not the test's).
    const panics = path.join(dir, 'panics');
    // Which starts panicked: a start on new ports after a port race (a port picked as free taken
    // before the real server bound it, seen in a fresh-clone CI) is a start too, not a panic.
    const panicked = path.join(dir, 'panicked');
    const wrapper = path.join(dir, 'temporal');
    fs.writeFileSync(wrapper, [
      '#!/bin/sh',
      `n=$(cat "${starts}" 2>/dev/null || echo 0)`,
      `echo $((n + 1)) > "${starts}"`,
      `if [ "$n" -lt "$(cat "${panics}")" ]; then echo $((n + 1)) >> "${panicked}"; echo "panic: runtime error: index out of range [3] with length 3" >&2; exit 2; fi`,
      `exec "${resolveTool('temporal')}" "$@"`,
    ].join('\n'), { mode: 0o755 });
    process.env.TEMPORAL_CLI_PATH = wrapper;
    try {
      fs.writeFileSync(panics, '1');
      const server = await ensureTemporalServer({ dataDir: path.join(dir, 'once'), port: await freePort(), uiPort: await freePort(), ifPortTaken: 'another' });
      await server.stop();
      // The first start panicked and was tried once more; nothing else panicked. More than two
      // starts only where a port race moved the server (the test above allows for it too).
      expect(fs.readFileSync(panicked, 'utf8').trim()).toBe('1');
      expect(Number(fs.readFileSync(starts, 'utf8').trim())).toBeGreaterThanOrEqual(2);
      expect(Number(fs.readFileSync(starts, 'utf8').trim())).toBeLessThanOrEqual(4);
      fs.rmSync(starts);
      fs.rmSync(panicked);
      fs.writeFileSync(panics, '2');
      await expect(ensureTemporalServer({ dataDir: path.join(dir, 'twice'), port: await freePort(), uiPort: await freePort(), ifPortTaken: 'another' }))
        .rejects.toThrow(/exited with code 2: panic: runtime error: index out of range/);
      // Two panics, and no third start: the caller hears of the second.
      expect(fs.readFileSync(panicked, 'utf8').trim().split('\n')).toEqual(['1', '2']);
      expect(fs.readFileSync(starts, 'utf8').trim()).toBe('2');
    } finally {
      for (const [k, v] of [['TEMPORAL_ADDRESS', saved.address], ['TEMPORAL_CLI_PATH', saved.cli]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('ends the embedded server with the process that started it, when that process crashes', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-crash-'));
    const entry = path.resolve(__dirname, '..', '..', 'dist', 'src', 'temporal', 'devServer.js');
    if (!fs.existsSync(entry)) throw new Error('build first: npm run build (make test does it)');
    // A process that starts its server, then dies of an error nothing catches.
    const script = `require(${JSON.stringify(entry)}).ensureTemporalServer({ dataDir: ${JSON.stringify(dir)}, port: ${await freePort()}, ifPortTaken: 'another' })
      .then(() => setTimeout(() => { throw new Error('boom'); }, 10));`;
    const env: NodeJS.ProcessEnv = { ...process.env, CRAWL_LOG_LEVEL: 'warn' };
    delete env.TEMPORAL_ADDRESS;
    const crashed = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 90_000 });
    expect(crashed.status).toBe(1);
    expect(crashed.stderr).toMatch(/boom/);
    const { pid } = JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8')) as { pid: number };
    const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
    for (let waited = 0; waited < 15_000 && alive(); waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(alive()).toBe(false);
  });
  it('`crawl dev-server` starts a server when TEMPORAL_ADDRESS is set (exported for the workers), and says when it names another', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-cli-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const address = `127.0.0.1:${port}`;
    const other = `127.0.0.1:${await freePort()}`;
    // Before, it connected to TEMPORAL_ADDRESS instead of starting one, and failed with
    // "cannot reach the Temporal server ... Start one with `crawl dev-server`".
    const server = started(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'crawl'), 'dev-server', '--data-dir', dir, '--port', String(port), '--ui-port', String(uiPort)],
      { TEMPORAL_ADDRESS: other, CRAWL_LOG_LEVEL: 'warn' });
    let out = '';
    server.child.stdout!.on('data', (d) => { out += d; });
    try {
      for (const until = Date.now() + 60_000; !out.includes('Ctrl-C') && server.child.exitCode === null && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(`Temporal server at ${address}, Web UI at http://127.0.0.1:${uiPort}. Ctrl-C stops it.`);
      expect(out).toContain(`Note: TEMPORAL_ADDRESS is ${other}, so crawl commands in this shell use that server, not this one.`);
      // It serves: a crawl command pointed at it gets an answer (no monitors yet).
      const status = await runCli(['status', '--json'], { TEMPORAL_ADDRESS: address, CRAWL_LOG_LEVEL: 'warn' });
      expect(status).toMatchObject({ code: 0 });
      // A table of nothing says which server it asked (before: a header, and no word).
      const table = await runCli(['status'], { TEMPORAL_ADDRESS: address, CRAWL_LOG_LEVEL: 'warn' });
      expect(table.code).toBe(0);
      expect(table.stderr).toContain(`crawl: no crawl has been started on the Temporal server at ${address} (namespace default): \`crawl start MANIFEST\` starts one there`);
      // Again over the same directory: its server is running, and this command leaves it be.
      const again = await runCli(['dev-server', '--data-dir', dir, '--port', String(await freePort())], { CRAWL_LOG_LEVEL: 'warn' });
      expect([again.code, again.stdout]).toEqual([0, `the Temporal server over ${dir} is already running at ${address}, Web UI at http://127.0.0.1:${uiPort}; left as it is (Ctrl-C where it was started stops it).\n`]);
      // Over another directory, on this server's port: before, it said "Temporal server at ...
      // Ctrl-C stops it." and exited, leaving the other directory's server to be taken for its own.
      const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'server-cli-other-'));
      const taken = await runCli(['dev-server', '--data-dir', elsewhere, '--port', String(port), '--ui-port', String(await freePort())], { CRAWL_LOG_LEVEL: 'warn' });
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`crawl: ${address} is taken by another server, not one over ${elsewhere}: pass another --port and --ui-port to start one over ${elsewhere}`);
      expect(fs.existsSync(path.join(elsewhere, 'temporal.sqlite'))).toBe(false);
    } finally {
      server.child.kill('SIGINT');
    }
    expect((await server.done).code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'server.json'))).toBe(false);
  });
});
