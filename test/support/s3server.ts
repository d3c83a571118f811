import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, portOpen } from '../../src/temporal/devServer';
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
    // A port found free can be taken by another process before moto binds it: then moto exits
    // (and whatever holds the port must not be mistaken for it), and it starts again elsewhere.
    for (let attempt = 1; attempt <= 3; attempt++) {
      this.port = await freePort();
      const child = spawn(bin, ['-H', '127.0.0.1', '-p', String(this.port)], { stdio: 'ignore' });
      this.child = child;
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && child.exitCode === null) {
        if (await portOpen('127.0.0.1', this.port) && child.exitCode === null) return this;
        await new Promise((r) => setTimeout(r, 200));
      }
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        throw new Error('moto_server did not start within 30 s');
      }
    }
    throw new Error(`moto_server exited before listening, three times (last on port ${this.port})`);
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      this.child!.once('exit', () => resolve());
      this.child!.kill('SIGTERM');
    });
  }
}
