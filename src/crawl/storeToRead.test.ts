import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../pipeline/store';
import { storeToRead } from './storeToRead';

describe('the store export and reasons read', () => {
  let cwd: string;
  beforeEach(() => { cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'store-to-read-')); });
  afterEach(() => fs.rmSync(cwd, { recursive: true, force: true }));

  it('is an error when the local store is not there, naming the crawl outputs in the working directory', () => {
    expect(() => storeToRead(path.join(cwd, '.crawl-data'), cwd)).toThrow(/^there is no local directory .*\/\.crawl-data\/store: give --data-dir the directory `crawl run --out` wrote, or the one the workers use \(CRAWL_DATA_DIR\)$/);
    fs.mkdirSync(path.join(cwd, 'crawl-out', 'store', 'records'), { recursive: true });
    fs.mkdirSync(path.join(cwd, 'not-a-crawl', 'store'), { recursive: true });
    expect(() => storeToRead(path.join(cwd, '.crawl-data'), cwd)).toThrow(/; here: --data-dir crawl-out$/);
    // `crawl again` names its own flag.
    expect(() => storeToRead(path.join(cwd, '.crawl-data'), cwd, '--out')).toThrow(/: give --out the directory .*; here: --out crawl-out$/);
  });

  it('names the directory that holds a store given as the directory', () => {
    fs.mkdirSync(path.join(cwd, 'crawl-out', 'store', 'records'), { recursive: true });
    const given = path.join(cwd, 'crawl-out', 'store');
    expect(() => storeToRead(given, cwd)).toThrow(`${given} is a store itself (it holds records/): give --data-dir ${path.join(cwd, 'crawl-out')}, the directory that holds it`);
    expect(() => storeToRead(given, cwd, '--out')).toThrow(/: give --out .*\/crawl-out, the directory that holds it$/);
  });

  it('is the store when it is there, records or not', () => {
    fs.mkdirSync(path.join(cwd, 'empty', 'store'), { recursive: true });
    const store = storeToRead(path.join(cwd, 'empty'), cwd);
    expect(store).toBeInstanceOf(LocalStore);
    expect((store as LocalStore).root).toBe(path.join(cwd, 'empty', 'store'));
  });
});
