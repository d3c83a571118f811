import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * One temporary directory per test run, which every test's os.tmpdir() then points into (the
 * workers inherit TMPDIR), removed by globalTeardown: tests make hundreds of stores, spools,
 * manifests and server data directories, and left ~50 MB in /tmp per run.
 */
export default function globalSetup(): void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'crawler-tests-'));
  process.env.CRAWLER_TEST_TMP = root;
  process.env.TMPDIR = root;
}
