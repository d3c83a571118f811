import { GuardedHosts } from './guardedHosts';
import { NetworkGuard } from '../pipeline/networkGuard';

const read = (allow: string[], origins: string[]) => {
  const g = new GuardedHosts(new NetworkGuard(allow));
  for (const o of origins) g.add(o);
  return g;
};

describe('URLs on addresses the network guard refuses, found as a manifest is read', () => {
  it('names the hosts, their URLs and the --allow-network that opens each, most URLs first', () => {
    const g = read([], ['museum.example', '10.0.0.7:8080', '10.0.0.7:8080', '[::1]:3000', 'localhost:5000', '93.184.216.34', '10.0.0.7:8080', '1.example.com', '[2606:2800:220:1:248:1893:25c8:1946]']);
    expect(g.warning({ run: '/data/out' })).toBe(
      '5 URL(s) are on addresses the network guard refuses, and would be recorded as refused without being asked for: '
      + '10.0.0.7:8080 (3 URL(s): address 10.0.0.7 is private), [::1]:3000 (1 URL(s): address ::1 is loopback), localhost:5000 (1 URL(s): address 127.0.0.1 is loopback). '
      + 'To crawl them (hosts you trust only), once this run ends: `crawl again --failed --allow-network 10.0.0.7 --allow-network ::1 --allow-network localhost --out /data/out`',
    );
    expect(g.warning('check')).toMatch(/\. `crawl run` crawls them given --allow-network 10\.0\.0\.7 --allow-network ::1 --allow-network localhost \(hosts you trust only\); `crawl start`, only if its workers were started with the same options$/);
  });

  it('says nothing of hosts the allow-list opens, or of names (judged as they are fetched)', () => {
    expect(read(['10.0.0.0/8', '::1', 'localhost'], ['10.0.0.7:8080', '[::1]:3000', 'localhost:5000', 'intranet.example']).warning({ run: '/o' })).toBeUndefined();
    // 127.0.0.0/8 opens what localhost resolves to.
    expect(read(['127.0.0.0/8'], ['localhost', '127.0.0.5:8765']).warning('check')).toBeUndefined();
    expect(read(['127.0.0.0/8'], ['10.1.2.3']).warning('check')).toMatch(/^1 URL\(s\) are on addresses .*: 10\.1\.2\.3 \(1 URL\(s\): address 10\.1\.2\.3 is private\)\./);
  });

  it('counts past the hosts it names, for a manifest of many private addresses', () => {
    const origins = Array.from({ length: 3000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    const w = read([], [...origins, '10.0.0.9', '10.0.0.9'])!.warning({ run: '/o' })!;
    expect(w).toMatch(/^3002 URL\(s\) are on addresses .*: 10\.0\.0\.9 \(3 URL\(s\): address 10\.0\.0\.9 is private\), 10\.0\.0\.0 \(1 URL/);
    expect(w).toMatch(/ and 2995 more URL\(s\) on other such hosts\. .*--allow-network 10\.0\.0\.100 --out \/o`, with an --allow-network for each of the other addresses too$/);
  });

  it('leaves out the URLs a crawl forgets (downloaded before), saying nothing once none is left', () => {
    const g = read([], ['10.0.0.7:8080', '10.0.0.7:8080', '127.0.0.5', 'museum.example']);
    g.forget('10.0.0.7:8080');
    g.forget('museum.example');
    expect(g.warning('check')).toMatch(/^2 URL\(s\) are on addresses .*: 10\.0\.0\.7:8080 \(1 URL\(s\): address 10\.0\.0\.7 is private\), 127\.0\.0\.5 \(1 URL/);
    g.forget('10.0.0.7:8080');
    g.forget('127.0.0.5');
    expect(g.warning('start')).toBeUndefined();
    const byUrl = read([], ['[::1]:3000', '10.0.0.7', 'localhost']);
    for (const url of ['http://[::1]:3000/a.jpg', 'https://10.0.0.7/b.jpg?x=1', 'http://localhost/c.jpg', 'http://museum.example/d.jpg']) byUrl.forgetUrl(url);
    expect(byUrl.warning('check')).toBeUndefined();
    // Past the hosts it keeps by name, the count alone.
    const many = read([], Array.from({ length: 1001 }, (_, i) => `10.0.${i >> 8}.${i & 255}`));
    many.forget('10.0.3.232');
    expect(many.warning('check')).toMatch(/^1000 URL\(s\)/);
  });
});
