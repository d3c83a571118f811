import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDirsSync } from './makeDirs';

describe('making directories', () => {
  let root: string;
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dirs-')); });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('makes every missing level and returns the first it made, as mkdir -p does', () => {
    expect(makeDirsSync(path.join(root, 'a', 'b', 'c'))).toBe(path.join(root, 'a'));
    expect(fs.statSync(path.join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
    expect(makeDirsSync(path.join(root, 'a', 'b', 'c'))).toBeUndefined();
    expect(makeDirsSync(path.join(root, 'a', 'd'))).toBe(path.join(root, 'a', 'd'));
  });

  it('fails with the error under a file or a dangling symlink', () => {
    fs.writeFileSync(path.join(root, 'file'), '');
    // The file in the way is named, not the directory asked for (`--out FILE`: FILE/store).
    expect(() => makeDirsSync(path.join(root, 'file', 'x', 'y'))).toThrow(`${path.join(root, 'file')} is a file, not a directory`);
    expect(() => makeDirsSync(path.join(root, 'file'))).toThrow(`${path.join(root, 'file')} is a file, not a directory`);
    fs.symlinkSync(path.join(root, 'nowhere', 'target'), path.join(root, 'dangling'));
    expect(() => makeDirsSync(path.join(root, 'dangling', 'x'))).toThrow(/ENOENT/);
  });
});
