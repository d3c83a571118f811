// Shared by the batch workflow and the activities, so free of Node APIs.

/**
 * One run of a chunk's batch workflow, as the name of its record files
 * (`records/<source>/<chunk>/<run>-g<grant>.ndjson`): a chunk crawled again (its crawl was
 * stopped and started again) writes files of its own beside those of the earlier run, which
 * tell it what is recorded already, and finds them by listing one small directory.
 */
export interface RecordUnit {
  chunkId: string;
  /** 12 hex digits of the batch's run id. */
  run: string;
}

/**
 * The last digits of the run id: run ids are time-ordered UUIDs whose first 8 digits stay the
 * same for a minute, so two runs of a chunk started within it wrote the same files.
 */
export function batchRunUnit(chunkId: string, runId: string): RecordUnit {
  return { chunkId, run: runId.replace(/[^0-9a-f]/gi, '').slice(-12).toLowerCase() };
}

/** A record file's name: a unit of the old kind (a batch id and grant), or a batch run's file. */
export type RecordFile = string | (RecordUnit & { part: string });

/** The record file of one part (`g<grant>`, `g<grant>-failed`) of a batch run, or of a batch without runs in its names. */
export function recordFile(unit: RecordUnit | undefined, batchId: string, part: string): RecordFile {
  return unit ? { ...unit, part } : `${batchId}-${part}`;
}
