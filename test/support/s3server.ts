import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { portOpen } from '../../src/temporal/devServer';
import { TOOLS_BIN, SETUP_COMMAND } from '../../src/temporal/tools';

/** moto's standalone S3 server as a real process on 127.0.0.1 (installed by the setup step). */
export class S3TestServer {
  private child?: ChildProcess;
  port = 0;

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const bin = process.env.MOTO_SERVER_PATH ?? path.join(TOOLS_BIN, 'moto_server');
    if (!fs.existsSync(bin)) throw new Error(`moto_server not found at ${bin}; run ${SETUP_COMMAND}`);
    this.port = await freePort();
    this.child = spawn(bin, ['-H', '127.0.0.1', '-p', String(this.port)], { stdio: 'ignore' });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (await portOpen('127.0.0.1', this.port)) return this;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('moto_server did not start within 30 s');
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      this.child!.once('exit', () => resolve());
      this.child!.kill('SIGTERM');
    });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
