import fs from 'node:fs';
import path from 'node:path';

/** Every metadata record a crawl wrote under DATA_DIR/store/records. */
export function readRecords(dataDir: string): Record<string, unknown>[] {
  const dir = path.join(dataDir, 'store', 'records');
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ndjson'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
}
