import { DEFAULT_ADAPTIVE } from '../politeness/adaptiveRate';
import { DEFAULT_BREAKER } from '../politeness/breaker';
import { DEFAULT_GOVERNOR } from '../politeness/governor';
import { DEFAULT_LATENCY } from '../politeness/latency';
import { SOURCE_CONFIG_FIELDS, invalidRate, invalidSourceConfig } from '../politeness/targetRate';
import { isChunkRange } from '../shared/chunkRanges';
import { isPlainObject } from '../shared/plainObject';
import type { WorkChunk, WorkItem } from '../shared/types';
import { DEFAULT_MONITOR_OPTIONS, monitorWorkflowId, type MonitorInput } from './monitorState';

/**
 * Checks of what a monitor is given from outside: its start input and addWork's chunks. `crawl
 * start` always sends good ones; these are for input written by hand with the Temporal CLI (the
 * README shows how), where a misspelt field or a string where a number belongs made the
 * monitor's every workflow task fail (a monitor stuck for ever, retried every few seconds) or
 * crawl with NaN counts, or, for `"rate": "2"`, fall back to the default rate without a word.
 *
 * Unknown fields are refused only in input written by hand: without a patch level (`crawl
 * start` and continue-as-new set one) and without carried state (continue-as-new of a build from
 * before levels), so that input from another build, with fields this one does not know, starts.
 */

const CHUNK_FIELDS = ['chunkId', 'count', 'urls', 'spool'];
const RANGE_NUMBERS = ['first', 'last', 'chunkSize', 'lastCount'] as const;
const INPUT_FIELDS = ['source', 'config', 'work', 'options', 'governorConfig', 'carried', 'patchLevel'];
const OPTION_FIELDS = [...Object.keys(DEFAULT_MONITOR_OPTIONS), 'taskQueue', 'smallSourceUrls'];
const GOVERNOR_PARTS: Record<string, readonly string[]> = {
  adaptive: Object.keys(DEFAULT_ADAPTIVE), breaker: Object.keys(DEFAULT_BREAKER), latency: Object.keys(DEFAULT_LATENCY),
};
const GOVERNOR_NUMBERS = Object.keys(DEFAULT_GOVERNOR).filter((k) => !(k in GOVERNOR_PARTS));
const GOVERNOR_FIELDS = [...Object.keys(GOVERNOR_PARTS), ...GOVERNOR_NUMBERS, 'globalCeiling'];

const CHUNK_EXAMPLE = '{"chunkId": "c1", "urls": ["https://a.example/1.jpg"]}';

/** A value as a short quote for a message. */
function shown(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 40)}...` : s;
}

function unknownFields(obj: Record<string, unknown>, known: readonly string[], what: string): string | undefined {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length === 0) return undefined;
  return `${what} has unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')} (its fields are ${known.join(', ')})`;
}

const isCount = (v: unknown, min: number) => typeof v === 'number' && Number.isInteger(v) && v >= min;

/** The first of `fields` that `obj` sets to something other than a finite number >= 0. */
const notNonNegative = (obj: Record<string, unknown>, fields: readonly string[]) =>
  fields.find((k) => obj[k] !== undefined && !(typeof obj[k] === 'number' && Number.isFinite(obj[k]) && (obj[k] as number) >= 0));

/** The chunk as the monitor keeps it (an inline chunk's count may be left out), or what is wrong with it. */
function checkChunk(item: Record<string, unknown>): WorkChunk | string {
  const { chunkId, count, urls, spool } = item;
  if (typeof chunkId !== 'string' || chunkId === '') return `a chunk needs a "chunkId" (a non-empty string): ${shown(item)}`;
  const what = `chunk ${JSON.stringify(chunkId)}`;
  const unknown = unknownFields(item, CHUNK_FIELDS, what);
  if (unknown) return unknown;
  if (urls !== undefined) {
    if (!Array.isArray(urls) || urls.length === 0 || !urls.every((u) => typeof u === 'string')) return `${what}: "urls" must be a non-empty list of URL strings`;
    if (count !== undefined && count !== urls.length) return `${what}: "count" is ${shown(count)} but it lists ${urls.length} URL${urls.length > 1 ? 's' : ''} (count may be left out)`;
    return { chunkId, count: urls.length, urls: urls as string[], ...(typeof spool === 'string' ? { spool } : {}) };
  }
  if (typeof spool !== 'string' || spool === '') return `${what} has neither "urls" nor a "spool" file`;
  if (!isCount(count, 1)) return `${what}: "count" must be the whole number of URLs in its spool file`;
  return { chunkId, count: count as number, spool };
}

function rangeProblem(item: Record<string, unknown>): string | undefined {
  if (typeof item.idPrefix !== 'string' || typeof item.spoolPrefix !== 'string') return `a chunk range needs string "idPrefix" and "spoolPrefix": ${shown(item)}`;
  const bad = RANGE_NUMBERS.find((k) => !isCount(item[k], k === 'first' || k === 'last' ? 0 : 1));
  if (bad) return `chunk range ${JSON.stringify(item.idPrefix)}: "${bad}" must be a whole number`;
  const { first, last, chunkSize, lastCount } = item as Record<(typeof RANGE_NUMBERS)[number], number>;
  if (last < first || lastCount > chunkSize) return `chunk range ${JSON.stringify(item.idPrefix)}: needs first <= last and lastCount <= chunkSize`;
  return undefined;
}

/** addWork's chunks that can be used (inline chunks with their counts), and what is wrong with the others. */
export function checkWorkItems(items: unknown): { items: WorkItem[]; problems: string[] } {
  if (!Array.isArray(items)) return { items: [], problems: [`work must be a list of chunks such as [${CHUNK_EXAMPLE}], not ${shown(items)}`] };
  const usable: WorkItem[] = [];
  const problems: string[] = [];
  items.forEach((item, i) => {
    if (!isPlainObject(item)) {
      problems.push(`work item ${i + 1} must be a chunk such as ${CHUNK_EXAMPLE}, not ${shown(item)}`);
    } else if (isChunkRange(item as unknown as WorkItem)) {
      const problem = rangeProblem(item);
      if (problem) problems.push(problem);
      else usable.push(item as unknown as WorkItem);
    } else {
      const chunk = checkChunk(item);
      if (typeof chunk === 'string') problems.push(chunk);
      else usable.push(chunk);
    }
  });
  return { items: usable, problems };
}

/** What is wrong with a source's config (a start input's, or a catalogue entry sent with addWork), if anything. */
export function configProblem(config: unknown): string | undefined {
  if (!isPlainObject(config)) return `"config" must be an object such as {"rate": 2}, not ${shown(config)}`;
  return unknownFields(config, SOURCE_CONFIG_FIELDS, '"config"') ?? prefixed('config', invalidSourceConfig(config));
}

function optionsProblem(options: unknown, strict: boolean): string | undefined {
  if (!isPlainObject(options)) return `"options" must be an object, not ${shown(options)}`;
  if (strict) {
    const unknown = unknownFields(options, OPTION_FIELDS, '"options"');
    if (unknown) return unknown;
  }
  const { finishWhenDrained, taskQueue } = options;
  if (finishWhenDrained !== undefined && typeof finishWhenDrained !== 'boolean') return 'options.finishWhenDrained must be true or false';
  if (taskQueue !== undefined && (typeof taskQueue !== 'string' || taskQueue === '')) return 'options.taskQueue must be a non-empty string';
  const bad = ['maxBatches', 'maxAttempts', 'maxHistoryEvents'].find((k) => options[k] !== undefined && !isCount(options[k], 1));
  if (bad) return `options.${bad} must be a whole number >= 1`;
  const negative = ['searchAttributeIntervalMs', 'smallSourceUrls'].find((k) => options[k] !== undefined && !isCount(options[k], 0));
  if (negative) return `options.${negative} must be a whole number >= 0`;
  return undefined;
}

function governorProblem(g: unknown, strict: boolean): string | undefined {
  if (!isPlainObject(g)) return `"governorConfig" must be an object such as {"globalCeiling": 10}, not ${shown(g)}`;
  if (strict) {
    const unknown = unknownFields(g, GOVERNOR_FIELDS, '"governorConfig"');
    if (unknown) return unknown;
  }
  if (g.globalCeiling !== undefined) {
    const bad = invalidRate(g.globalCeiling);
    if (bad) return `governorConfig.globalCeiling: ${bad}`;
  }
  for (const [part, fields] of Object.entries(GOVERNOR_PARTS)) {
    const v = g[part];
    if (v === undefined) continue;
    if (!isPlainObject(v)) return `governorConfig.${part} must be an object`;
    if (strict) {
      const unknown = unknownFields(v, fields, `governorConfig.${part}`);
      if (unknown) return unknown;
    }
    const bad = notNonNegative(v, fields);
    if (bad) return `governorConfig.${part}.${bad} must be a number >= 0`;
  }
  const bad = notNonNegative(g, GOVERNOR_NUMBERS);
  return bad ? `governorConfig.${bad} must be a number >= 0` : undefined;
}

function prefixed(where: string, problem: string | undefined): string | undefined {
  return problem && `${where}: ${problem}`;
}

/** Input neither `crawl start` (which gives its patch level) nor a continue-as-new (its carried state) wrote. */
function handWritten(input: { patchLevel?: unknown; carried?: unknown }): boolean {
  return input.patchLevel === undefined && input.carried === undefined;
}

/**
 * A monitor started with input written by hand must have the workflow id its source derives
 * from: one started as `crawl-monitor:x` for source "y" was out of reach of every `crawl`
 * command for "y", and `crawl start` would have started a second monitor for "y", sending to
 * the same site at a second rate. (`crawl start` and a continue-as-new always use the id.)
 */
export function monitorIdProblem(input: MonitorInput, workflowId: string): string | undefined {
  const id = monitorWorkflowId(input.source);
  return handWritten(input) && workflowId !== id
    ? `the workflow id of source ${JSON.stringify(input.source)}'s monitor must be ${id}, not ${workflowId}: a source has one monitor, which \`crawl\` commands find by that id`
    : undefined;
}

/** The input a monitor can start from (chunks as checkWorkItems keeps them), or why it cannot. */
export function checkMonitorInput(input: unknown): { input: MonitorInput } | { problem: string } {
  if (!isPlainObject(input)) return { problem: `the input must be an object such as {"source": "museum", "config": {"rate": 2}, "work": [${CHUNK_EXAMPLE}]}` };
  const strict = handWritten(input);
  const { source, config, work, options, governorConfig } = input;
  if (typeof source !== 'string' || source === '') return { problem: '"source" (the source\'s name, a non-empty string) is required' };
  const problem = (strict ? unknownFields(input, INPUT_FIELDS, 'the input') : undefined)
    ?? (config !== undefined ? configProblem(config) : undefined)
    ?? (options !== undefined ? optionsProblem(options, strict) : undefined)
    ?? (governorConfig !== undefined ? governorProblem(governorConfig, strict) : undefined);
  if (problem) return { problem };
  if (work === undefined) return { input: input as unknown as MonitorInput };
  const checked = checkWorkItems(work);
  if (checked.problems.length) return { problem: checked.problems.join('; ') };
  return { input: { ...(input as unknown as MonitorInput), work: checked.items } };
}
