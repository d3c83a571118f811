import path from 'node:path';
import { againNote } from './againNote';
import { FailureTally } from './failureTally';
import { NetworkGuard } from '../pipeline/networkGuard';

const closed = new NetworkGuard([]);
const rec = (outcome: string, reason: string) => JSON.stringify({ url: 'http://x/a.jpg', source: 's', outcome, reason });
const tally = (...lines: string[]) => {
  const t = new FailureTally();
  t.addText(lines.map((l) => `${l}\n`).join(''));
  return t;
};
const out = path.resolve('/data/out');

describe('the end of a crawl saying how to ask again', () => {
  it('says nothing when nothing is to be asked again', () => {
    expect(againNote(tally(rec('linkrot', 'http 404'), rec('robots', 'robots.txt disallows /a.jpg')), out, true)).toBeUndefined();
  });

  it('gives the commands for walled and failed URLs', () => {
    expect(againNote(tally(rec('content', 'not an image: an HTML page'), rec('error', 'timeout: total timeout; 0 bytes of the body received')), out, true)).toBe(
      'to ask again for the 1 URL(s) a wall answered (pages, empty bodies, endless redirects, 4xx refusals), once the site lets the crawler through: `crawl again --out /data/out`; '
      + 'for the 1 URL(s) that failed or were refused: `crawl again --failed --out /data/out`',
    );
  });

  it('opens in its command the addresses the network guard refused, which a bare --failed would be refused again', () => {
    const t = tally(
      rec('refused', `refused intranet.example: ${closed.refusal('10.0.0.7')}`),
      rec('refused', `refused intranet.example: ${closed.refusal('10.0.0.7')}`),
      rec('refused', closed.refusal('64:ff9b::a00:8')!),
      rec('error', 'http 503; gave up after 3 tries'),
      rec('refused', 'the proxy http://p:3128 refused a tunnel to 203.0.113.7:80 (403 Forbidden)'),
    );
    expect(againNote(t, out, true)).toBe(
      'to ask again for the 5 URL(s) that failed or were refused (the network guard refused 3 of them: the --allow-network options open the addresses they resolved to; '
      + 'leave out any you do not trust): `crawl again --failed --allow-network 10.0.0.7 --allow-network 10.0.0.8 --out /data/out`',
    );
    // Against TEMPORAL_ADDRESS the guard is the operator's workers': an option to `crawl again` would open nothing.
    expect(againNote(t, out, false)).toBe(
      'to ask again for the 5 URL(s) that failed or were refused (the network guard of this crawl\'s workers refused 3 of them: restart those workers with '
      + '--allow-network 10.0.0.7 --allow-network 10.0.0.8 first, leaving out any you do not trust): `crawl again --failed --out /data/out`',
    );
  });

  it('leaves many addresses to the records instead of a command a screen long', () => {
    const lines = Array.from({ length: 150 }, (_, i) => rec('refused', closed.refusal(`10.0.${i >> 8}.${i & 255}`)!));
    expect(againNote(tally(...lines.slice(0, 6)), out, true)).toBe(
      'to ask again for the 6 URL(s) that failed or were refused (the network guard refused 6 of them, at 6 addresses, each named in its records: '
      + 'add an --allow-network for each one you trust): `crawl again --failed --out /data/out`',
    );
    expect(againNote(tally(...lines), out, false)).toContain('(the network guard of this crawl\'s workers refused 150 of them, at 100 or more addresses');
  });

  it('names the run\'s own sources in its commands when the store holds other crawls\' URLs too, while they are few', () => {
    const lines = [rec('content', 'not an image: an HTML page'), rec('error', 'http 503; gave up after 3 tries'), JSON.stringify({ url: 'http://y/b.jpg', source: 'other', outcome: 'error', reason: 'http 500' })];
    const shared = new FailureTally(new Set(['s', 'my site']));
    shared.addText(lines.join('\n'));
    expect(againNote(shared, out, true)).toBe(
      'to ask again for the 1 URL(s) a wall answered (pages, empty bodies, endless redirects, 4xx refusals), once the site lets the crawler through: `crawl again \'my site\' s --out /data/out`; '
      + 'for the 1 URL(s) that failed or were refused: `crawl again \'my site\' s --failed --out /data/out`',
    );
    // Alone in the store, the command asks for all of it; with many sources of its own, too.
    const alone = new FailureTally(new Set(['s']));
    alone.addText(lines.slice(0, 2).join('\n'));
    expect(againNote(alone, out, true)).toContain('`crawl again --failed --out /data/out`');
    const many = new FailureTally(new Set(['s', 'a', 'b', 'c', 'd', 'e']));
    many.addText(lines.join('\n'));
    expect(againNote(many, out, true)).toContain('`crawl again --failed --out /data/out`');
  });
});

