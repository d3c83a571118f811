import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { log } from '../shared/log';
import { ALL_SEARCH_ATTRIBUTES } from './searchAttributes';
import { envText } from '../shared/env';
import { crawlOutputsIn } from '../shared/crawlOutputs';
import { errorText } from '../shared/errorText';
import { connectionSettings, DEFAULT_ADDRESS, type ConnectionSettings } from './connectionSettings';

export const DEFAULT_NAMESPACE = envText('TEMPORAL_NAMESPACE', 'default');
export const TASK_QUEUE = envText('CRAWL_TASK_QUEUE', 'image-crawler');

export function temporalAddress(): string {
  return envText('TEMPORAL_ADDRESS', DEFAULT_ADDRESS);
}

/** The server at `address` (one this process started or found: no TLS), else the operator's (connectionSettings). */
function settingsFor(address: string | undefined): ConnectionSettings {
  return address === undefined ? connectionSettings() : { address };
}

export async function connectClient(address?: string): Promise<Client> {
  const settings = settingsFor(address);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...settings, connectTimeout: 5000 });
  } catch (err) {
    const theirs = address === undefined && !envText('TEMPORAL_ADDRESS') ? endedRunsHint(process.cwd()) : '';
    throw new Error(
      `cannot reach the Temporal server at ${settings.address}: ${errorText(err)}. ` +
        `Start one with \`crawl dev-server\`, or set TEMPORAL_ADDRESS (and TEMPORAL_TLS_* or TEMPORAL_API_KEY for a server that needs them)${theirs}.`,
    );
  }
  return new Client({ connection, namespace: DEFAULT_NAMESPACE });
}

/**
 * `crawl run`'s own server ends with it: a command after the run finds none, and a new `crawl
 * dev-server` over another directory would show an empty server. Names the way back to the
 * crawls whose output is in `cwd`, or '' when there are none.
 */
export function endedRunsHint(cwd: string): string {
  const runs = crawlOutputsIn(cwd, 'server');
  if (!runs.length) return '';
  return `; the embedded server of the crawl in ${runs[0]} (\`crawl run --out\`, the demo) ended with it, and \`crawl dev-server --data-dir ${path.join(runs[0]!, 'temporal')}\` serves that crawl again` +
    (runs.length > 1 ? ` (other crawls' output here: ${runs.slice(1).join(', ')})` : '');
}

export function connectWorker(address?: string): Promise<NativeConnection> {
  return NativeConnection.connect(settingsFor(address));
}

/**
 * Registers the crawler's search attributes on a server that lacks them (a compose stack, a
 * server that was started without our flags). Already-registered keys are left alone.
 */
export async function ensureSearchAttributes(client: Client): Promise<void> {
  const ops = client.connection.operatorService;
  const namespace = client.options.namespace;
  let missing = ALL_SEARCH_ATTRIBUTES;
  try {
    const existing = await ops.listSearchAttributes({ namespace });
    missing = ALL_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (existing.customAttributes ?? {})));
  } catch (err) {
    // The time-skipping test server cannot list search attributes but can add them.
    if ((err as { code?: number }).code !== 12 /* UNIMPLEMENTED */) throw err;
  }
  if (missing.length === 0) return;
  try {
    await ops.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, encodeSearchAttributeIndexedValueType(k.type)!])),
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 6 /* ALREADY_EXISTS */) throw err;
  }
  log.info({ event: 'temporal.search-attributes.added', keys: missing.map((k) => k.name) }, 'registered search attributes');
}
