import fs from 'node:fs';

/**
 * Whether process `pid` holds the listening TCP socket of `port` (Linux: its /proc), or
 * undefined where that cannot be read. A server we start answers on its port only if it bound
 * it: two `crawl run`s started in the same second both found 7233 free, the second's server failed
 * to bind, and that run took the first's server, answering there, for its own. Its monitors then
 * ran on the first run's worker, which could not read their chunk files from its own store.
 */
export function listensOn(pid: number, port: number): boolean | undefined {
  let sockets: Set<string>;
  try {
    sockets = new Set(fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      } catch {
        return undefined; // closed meanwhile
      }
    }).filter((inode): inode is string => inode !== undefined));
  } catch {
    return undefined;
  }
  let tables = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'utf8');
      tables += 1;
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (parseInt(f[1]!.split(':')[1]!, 16) === port && sockets.has(f[9]!)) return true;
    }
  }
  return tables ? false : undefined;
}
