import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from '../shared/log';

/**
 * The workflow code bundled once at build time (`npm run build`), so that a worker does not run
 * webpack every time it starts: that took 1.0-1.2 s and 1.3-1.5 s of CPU here, and left the
 * worker ~80 MB larger for its whole life (bench/RESULTS.md, session 18).
 *
 * A bundle is used only when it was made from the compiled code now in dist/: a worker started
 * after `tsc` alone, without the bundling step, would otherwise run old workflows next to new
 * activities. The check is a hash of every compiled file's contents, not of timestamps, so an
 * unchanged rebuild keeps its bundle valid.
 */
export interface BundleManifest {
  /** sha256 over the compiled sources' paths and contents (compiledFingerprint). */
  fingerprint: string;
  bytes: number;
}

export function bundlePaths(workflowsPath: string): { code: string; manifest: string; compiledRoot: string } {
  // dist/src/workflows/index.js -> dist/src (compiled code) and dist/ (where the bundle lives).
  const compiledRoot = path.resolve(path.dirname(workflowsPath), '..');
  const dist = path.dirname(compiledRoot);
  return { code: path.join(dist, 'workflow-bundle.js'), manifest: path.join(dist, 'workflow-bundle.json'), compiledRoot };
}

/**
 * A hash of every .js file under `root`, by relative path and contents, and of the workflow
 * SDK's package.json (the bundle holds its code too: an upgrade without a rebuild must not run it).
 */
export function compiledFingerprint(root: string): string {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && e.name.endsWith('.js')) files.push(p);
    }
  };
  walk(root);
  const h = createHash('sha256');
  h.update(fs.readFileSync(require.resolve('@temporalio/workflow/package.json'))).update('\0');
  for (const f of files.sort()) {
    h.update(path.relative(root, f)).update('\0');
    h.update(fs.readFileSync(f)).update('\0');
  }
  return h.digest('hex');
}

/** Bundles the compiled workflows next to dist/src, with the manifest that vouches for them. */
export async function writeWorkflowBundle(workflowsPath: string): Promise<{ code: string; bytes: number }> {
  const paths = bundlePaths(workflowsPath);
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
  const manifest: BundleManifest = { fingerprint: compiledFingerprint(paths.compiledRoot), bytes: Buffer.byteLength(code) };
  // Code first, manifest last: a bundle without a manifest that matches is never used.
  fs.rmSync(paths.manifest, { force: true });
  writeAtomically(paths.code, code);
  writeAtomically(paths.manifest, `${JSON.stringify(manifest)}\n`);
  return { code: paths.code, bytes: manifest.bytes };
}

/**
 * How a worker gets its workflow code: the prebuilt bundle when it matches the compiled code,
 * else bundled now from `workflowsPath` (always so when running from TypeScript sources, as the
 * tests do).
 */
export function workflowCodeOption(workflowsPath: string, log?: Pick<Logger, 'warn'>): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (!workflowsPath.endsWith('.js')) return { workflowsPath };
  const paths = bundlePaths(workflowsPath);
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(paths.manifest, 'utf8')) as BundleManifest;
  } catch {
    log?.warn({ event: 'workflow-bundle', bundle: paths.code }, 'no prebuilt workflow bundle (run `npm run build`); bundling the workflows now, which takes a few seconds');
    return { workflowsPath };
  }
  if (manifest.fingerprint !== compiledFingerprint(paths.compiledRoot) || !fs.existsSync(paths.code)) {
    log?.warn({ event: 'workflow-bundle', bundle: paths.code }, 'the prebuilt workflow bundle does not match the compiled code (run `npm run build`); bundling the workflows now');
    return { workflowsPath };
  }
  return { workflowBundle: { codePath: paths.code } };
}

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

// webpack's report of every module it bundled is noise in a build's output; its warnings and
// errors still show.
const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string, meta?: Record<string, unknown>) => console.warn(message, meta ?? ''),
  error: (message: string, meta?: Record<string, unknown>) => console.error(message, meta ?? ''),
};

if (require.main === module) {
  writeWorkflowBundle(require.resolve('../workflows')).then(
    ({ code, bytes }) => console.log(JSON.stringify({ event: 'workflow-bundle', msg: 'workflow code bundled', file: code, bytes })),
    (err: unknown) => {
      console.error(`bundling the workflows failed: ${(err as Error).stack ?? String(err)}`);
      process.exit(1);
    },
  );
}
