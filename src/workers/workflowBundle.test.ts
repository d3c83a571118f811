import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundlePaths, compiledFingerprint, workflowCodeOption } from './workflowBundle';

/** A dist/ laid out as `npm run build` leaves it: compiled code under dist/src, the bundle in dist/. */
function fakeDist(): { workflowsPath: string; write: (manifest: object) => void } {
  const dist = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-')), 'dist');
  fs.mkdirSync(path.join(dist, 'src', 'workflows'), { recursive: true });
  fs.mkdirSync(path.join(dist, 'src', 'politeness'), { recursive: true });
  const workflowsPath = path.join(dist, 'src', 'workflows', 'index.js');
  fs.writeFileSync(workflowsPath, 'exports.a = 1;\n');
  fs.writeFileSync(path.join(dist, 'src', 'politeness', 'pacing.js'), 'exports.b = 2;\n');
  const paths = bundlePaths(workflowsPath);
  return {
    workflowsPath,
    write: (manifest) => {
      fs.writeFileSync(paths.code, '/* bundle */');
      fs.writeFileSync(paths.manifest, JSON.stringify(manifest));
    },
  };
}

describe('the prebuilt workflow bundle', () => {
  it('is used when it was made from the compiled code now in dist/', () => {
    const d = fakeDist();
    const { compiledRoot, code } = bundlePaths(d.workflowsPath);
    d.write({ fingerprint: compiledFingerprint(compiledRoot), bytes: 12 });
    const warn = jest.fn();
    expect(workflowCodeOption(d.workflowsPath, { warn })).toEqual({ workflowBundle: { codePath: code } });
    expect(warn).not.toHaveBeenCalled();
  });

  it('is not used, and the worker says so, once any compiled file has changed since (tsc without the bundling step)', () => {
    const d = fakeDist();
    const { compiledRoot } = bundlePaths(d.workflowsPath);
    d.write({ fingerprint: compiledFingerprint(compiledRoot), bytes: 12 });
    // A module the workflows import, not the entry point: the bundle holds it too.
    fs.writeFileSync(path.join(compiledRoot, 'politeness', 'pacing.js'), 'exports.b = 3;\n');
    const warn = jest.fn();
    expect(workflowCodeOption(d.workflowsPath, { warn })).toEqual({ workflowsPath: d.workflowsPath });
    expect(warn.mock.calls[0]![1]).toMatch(/does not match the compiled code \(run `npm run build`\)/);
  });

  it('is bundled afresh when there is none, and always when running from TypeScript sources', () => {
    const d = fakeDist();
    const warn = jest.fn();
    expect(workflowCodeOption(d.workflowsPath, { warn })).toEqual({ workflowsPath: d.workflowsPath });
    expect(warn.mock.calls[0]![1]).toMatch(/no prebuilt workflow bundle/);
    const ts = path.join(path.dirname(d.workflowsPath), 'index.ts');
    expect(workflowCodeOption(ts, { warn })).toEqual({ workflowsPath: ts });
  });

  it('does not change when the same code is compiled again (contents, not timestamps)', () => {
    const d = fakeDist();
    const { compiledRoot } = bundlePaths(d.workflowsPath);
    const before = compiledFingerprint(compiledRoot);
    fs.writeFileSync(d.workflowsPath, 'exports.a = 1;\n');
    fs.utimesSync(d.workflowsPath, new Date(), new Date(Date.now() + 60_000));
    expect(compiledFingerprint(compiledRoot)).toBe(before);
    fs.renameSync(d.workflowsPath, path.join(compiledRoot, 'workflows', 'other.js'));
    expect(compiledFingerprint(compiledRoot)).not.toBe(before);
  });
});
