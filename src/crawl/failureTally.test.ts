import { FailureTally } from './failureTally';

const rec = (source: string, outcome: string, reason?: string) => JSON.stringify({ url: 'https://x/a.jpg', source, outcome, ...(reason !== undefined ? { reason } : {}) });

describe('why URLs did not end as done, for the end of crawl run', () => {
  it('counts the commonest reasons per source, grouping those that name the URL\'s own path or size', () => {
    const t = new FailureTally();
    t.addText([
      rec('museum', 'done'),
      rec('museum', 'robots', 'robots.txt disallows /private/a.jpg'),
      rec('museum', 'robots', 'robots.txt disallows /private/b c.jpg'),
      rec('museum', 'linkrot', 'http 404'),
      rec('museum', 'content', 'image of 30000x30000 pixels exceeds the 100000000-pixel limit'),
      '',
    ].join('\n'));
    t.addText(`${rec('dead', 'error', 'robots.txt unreachable (connect ECONNREFUSED 127.0.0.2:80); gave up after 3 tries at least 5 min apart')}\n`.repeat(3));
    t.addText(`${rec('cut', 'error', 'network: UND_ERR_SOCKET: other side closed; 100 of 4823 bytes of the body received')}\n${rec('cut', 'error', 'network: UND_ERR_SOCKET: other side closed; 7 of 90 bytes of the body received')}\n`);
    t.addText(`${rec('cut', 'error', 'timeout: total timeout; 0 bytes of the body received')}\n`);
    t.addText('not json\n{"half": ');
    expect(t.lines()).toEqual([
      'cut: 2 error: network: UND_ERR_SOCKET: other side closed; N of M bytes of the body received · 1 error: timeout: total timeout; N bytes of the body received',
      'dead: 3 error: robots.txt unreachable (connect ECONNREFUSED 127.0.0.2:80); gave up after 3 tries at least 5 min apart',
      'museum: 2 robots: disallowed by robots.txt · 1 content: image of WxH pixels exceeds the 100000000-pixel limit · 1 linkrot: http 404',
    ]);
    // What `crawl again` would ask for: the failures, and no wall's answers among these.
    expect(t.again).toEqual({ walled: 0, failed: 6 });
    t.addText(`${rec('wall', 'content', 'not an image: an HTML page')}\n${rec('wall', 'content', 'http 401')}\n`);
    expect(t.again).toEqual({ walled: 2, failed: 6 });
  });

  it('says how many more have other reasons, and stays bounded however many distinct reasons come', () => {
    const t = new FailureTally();
    for (let i = 0; i < 500; i++) t.addText(rec('s', 'error', `network: reason ${i}`));
    t.addText(rec('s', 'error'));
    const [line] = t.lines(2);
    expect(line).toMatch(/^s: \d+ error: .+ · \d+ error: .+ · 499 more with other reasons$/);
    // 100 distinct reasons are kept; the other 401 records share one entry.
    expect(t.lines(1000)[0]!.split(' · ')).toHaveLength(101);
  });

  it('shows a site\'s failures first among reasons as common as each other', () => {
    const t = new FailureTally();
    t.addText([
      rec('s', 'content', 'http 302: a redirect without a Location header'),
      rec('s', 'content', 'not an image: an HTML page'),
      rec('s', 'linkrot', 'http 404'),
      rec('s', 'error', 'protocol: bad response; not asked again'),
      rec('s', 'refused', 'credentials in URLs are not allowed'),
      rec('s', 'error', 'network: ECONNRESET'),
    ].join('\n'));
    expect(t.lines()).toEqual(['s: 1 error: network: ECONNRESET · 1 error: protocol: bad response; not asked again · 1 refused: credentials in URLs are not allowed · 3 more with other reasons']);
  });

  it('has nothing to say when everything was done', () => {
    const t = new FailureTally();
    t.addText(`${rec('a', 'done')}\n${rec('b', 'done')}\n`);
    expect(t.lines()).toEqual([]);
  });

  it('tallies only the sources it is given, when the store holds another crawl\'s records too', () => {
    const t = new FailureTally(new Set(['museum']));
    t.addText([rec('museum', 'linkrot', 'http 404'), rec('other', 'error', 'http 503; gave up after 3 tries'), rec('other', 'content', 'not an image: an HTML page'), rec('other', 'done')].join('\n'));
    expect(t.lines()).toEqual(['museum: 1 linkrot: http 404']);
    expect([t.again, t.otherSources]).toEqual([{ walled: 0, failed: 0 }, 2]);
  });
});

