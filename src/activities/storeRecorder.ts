import type { ObjectStore } from '../pipeline/store';
import { recordKey } from '../pipeline/keys';
import type { RecordFile } from '../shared/recordUnits';
import type { Recorder } from './crawlActivities';

/** Metadata records as NDJSON objects in the store, one object per unit of work. */
export class StoreRecorder implements Recorder {
  constructor(private readonly store: ObjectStore) {}

  async write(source: string, unit: RecordFile, records: Record<string, unknown>[]): Promise<void> {
    // No records, an empty file: it replaces the unit's earlier contents without a blank line.
    const text = records.map((r) => `${JSON.stringify(r)}\n`).join('');
    await this.store.put(recordKey(source, unit), text, 'application/x-ndjson');
  }

  async read(source: string, unit: RecordFile): Promise<unknown[] | undefined> {
    const body = await this.store.get(recordKey(source, unit));
    if (!body) return undefined;
    return body.toString('utf8').split('\n').flatMap((line) => {
      if (!line) return [];
      try {
        return [JSON.parse(line) as unknown];
      } catch {
        return []; // a line cut short says nothing of its URL: it is fetched again
      }
    });
  }
}
