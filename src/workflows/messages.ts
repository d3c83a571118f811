import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Grant, OutcomeReport, SourceConfig, TokenRequest, WorkItem } from '../shared/types';
import type { MonitorStats } from './monitorStats';

// The crawl's message names. They are a public interface: operators use them with the
// Temporal CLI (see README), so renaming one is a breaking change.

// --- crawl monitor: operator surface -----------------------------------------------------
export const statsQuery = defineQuery<MonitorStats>('stats');
export const pauseUpdate = defineUpdate<string, []>('pause');
// The argument may be omitted from the Temporal CLI; the handler treats a missing one as {}.
export const resumeUpdate = defineUpdate<string, [ResumeInput]>('resume');
export const setRateUpdate = defineUpdate<string, [SetRateInput]>('setRate');
/** A new global ceiling for a running crawl (`maxRate: null` lifts it). */
export const setMaxRateUpdate = defineUpdate<string, [SetMaxRateInput]>('setMaxRate');
/** A new cap on the Retry-After honoured for a running crawl (`--max-retry-after` of its start). */
export const setMaxRetryAfterUpdate = defineUpdate<string, [SetMaxRetryAfterInput]>('setMaxRetryAfter');
/** A source's own limit on requests open at once to its site (its maxConnections; `null` lifts it). */
export const setMaxConnectionsUpdate = defineUpdate<string, [SetMaxConnectionsInput]>('setMaxConnections');
export const stopUpdate = defineUpdate<string, []>('stop');
/**
 * What `crawl start` sends with a source's work when its catalogue has an entry for it, or it was
 * given --max-rate: a monitor already running takes either when it has changed
 * (Governor.takeCatalogEntry). A monitor of an older build ignores them, as it ignored them in
 * its start input.
 */
export interface AddWorkOptions {
  catalog?: SourceConfig;
  /** The command's global ceiling (`--max-rate`), taken the same way (Governor.takeGivenCeiling). */
  maxRate?: number;
  /** The command's cap on the Retry-After honoured (`--max-retry-after`, ms): Governor.takeMaxRetryAfter. */
  maxRetryAfterMs?: number;
}
/** Adds chunks or ranges of chunks; chunks already seen are ignored, so re-sending is harmless. */
export const addWorkSignal = defineSignal<[WorkItem[], AddWorkOptions?]>('addWork');

// --- crawl monitor: batch traffic ----------------------------------------------------------
export const requestTokensSignal = defineSignal<[TokenRequest]>('requestTokens');
export const reportOutcomesSignal = defineSignal<[OutcomeReport]>('reportOutcomes');
export const batchFinishedSignal = defineSignal<[BatchFinished]>('batchFinished');
/** A cancelled batch (its crawl was stopped) whose fetch activities have all ended. */
export const batchStoppedSignal = defineSignal<[{ batchId: string }]>('batchStopped');

// --- batch ---------------------------------------------------------------------------------
export const grantSignal = defineSignal<[Grant]>('grant');
/**
 * The monitor stopped granting (paused, temporary or permanent halt): grants already given are
 * no longer valid. The batch cancels the fetch activities using them, which stop sending at
 * their next heartbeat and hand back what they had not sent.
 */
export const revokeGrantsSignal = defineSignal<[{ reason: string }]>('revokeGrants');
/** Carries nothing: a monitor that finds a batch already started learns from it whether that batch still runs. */
export const pingSignal = defineSignal('ping');

export interface ResumeInput {
  rate?: number;
}

export interface SetRateInput {
  rate: number;
  burst?: number;
}

export interface SetMaxRateInput {
  maxRate: number | null;
}

export interface SetMaxRetryAfterInput {
  maxRetryAfterMs: number;
}

export interface SetMaxConnectionsInput {
  maxConnections: number | null;
}

export interface BatchFinished {
  batchId: string;
  chunkId: string;
  urls: number;
}
