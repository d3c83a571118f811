import fs from 'node:fs';
import path from 'node:path';
import { CRAWL_SETTINGS, unknownSettings, unknownSettingText } from './settingNames';

const ROOT = path.join(__dirname, '..', '..');

/** The files of the project that read (or set) our variables, tests aside. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|sh|js)$/.test(e.name) && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

describe('the names of our settings', () => {
  it('lists every CRAWL_* variable the code, tools and benches read or the compose file sets, and nothing else', () => {
    const files = [...['src', 'bench', 'scripts'].flatMap((d) => sources(path.join(ROOT, d))), ...['bin/crawl', 'Makefile', 'Dockerfile', 'docker-compose.yml'].map((f) => path.join(ROOT, f))];
    const read = new Set<string>();
    // In code a quoted name or `env.NAME`; in shell, make and compose files `$NAME`, `${NAME`,
    // `NAME=` or `NAME:`. Constants of the same shape (the search attributes' CRAWL_STATE) are
    // none of those.
    const inCode = /['"`](CRAWL_[A-Z0-9_]*[A-Z0-9])['"`]|env\.(CRAWL_[A-Z0-9_]*[A-Z0-9])/g;
    const inShell = /\$\{?(CRAWL_[A-Z0-9_]*[A-Z0-9])|^\s*(?:export\s+|ENV\s+)?(CRAWL_[A-Z0-9_]*[A-Z0-9])[=:]/gm;
    for (const f of files) {
      if (f.endsWith('settingNames.ts')) continue;
      const text = fs.readFileSync(f, 'utf8');
      for (const m of text.matchAll(/\.(ts|js)$/.test(f) ? inCode : inShell)) read.add((m[1] ?? m[2])!);
    }
    expect([...read].sort()).toEqual([...CRAWL_SETTINGS].sort());
  });

  it('finds the CRAWL_* variables set that none reads, and names the one most likely meant', () => {
    const env = { CRAWL_ALLOW_NETWORK: '127.0.0.0/8', CRAWL_MAXRATE: '5', CRAWL_S3_BUCKETS: 'b', CRAWL_HOME: '/opt', CRAWL_MAX_RATE: '5', PATH: '/bin', crawl_max_rate: '1' };
    expect(unknownSettings(env)).toEqual([
      { name: 'CRAWL_ALLOW_NETWORK', meant: 'CRAWL_ALLOW_NETWORKS' },
      { name: 'CRAWL_HOME' },
      { name: 'CRAWL_MAXRATE', meant: 'CRAWL_MAX_RATE' },
      { name: 'CRAWL_S3_BUCKETS', meant: 'CRAWL_S3_BUCKET' },
    ]);
    expect(unknownSettingText({ name: 'CRAWL_MAXRATE', meant: 'CRAWL_MAX_RATE' })).toBe('CRAWL_MAXRATE is set, but the crawler has no such setting (did you mean CRAWL_MAX_RATE?): it is ignored (the settings are in docs/operations.md)');
    expect(unknownSettings({ CRAWL_MAX_RATE: '5', CRAWL_STORE: 'local' })).toEqual([]);
  });
});
