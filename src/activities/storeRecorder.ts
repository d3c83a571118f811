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
}
