import { spawn } from 'node:child_process';
import net from 'node:net';
import { listensOn } from './listeningProcess';

describe('listensOn', () => {
  it('tells the process that listens on a port from one that does not', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore' });
    try {
      if (listensOn(process.pid, port) === undefined) return; // no /proc here: nothing to tell
      expect(listensOn(process.pid, port)).toBe(true);
      expect(listensOn(other.pid!, port)).toBe(false);
      expect(listensOn(process.pid, port === 65535 ? 1 : port + 1)).toBe(false);
    } finally {
      other.kill('SIGKILL');
      server.close();
    }
  });
});
