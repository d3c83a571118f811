import fs from 'node:fs';

export default function globalTeardown(): void {
  const root = process.env.CRAWLER_TEST_TMP;
  // Kept when asked, to look at what a failing test left behind.
  if (root && !process.env.KEEP_TEST_TMP) fs.rmSync(root, { recursive: true, force: true });
}
