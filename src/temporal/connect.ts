import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { log } from '../shared/log';
import { ALL_SEARCH_ATTRIBUTES } from './searchAttributes';
import { envText } from '../shared/env';

export const DEFAULT_NAMESPACE = envText('TEMPORAL_NAMESPACE', 'default');
export const TASK_QUEUE = envText('CRAWL_TASK_QUEUE', 'image-crawler');

export function temporalAddress(): string {
  return envText('TEMPORAL_ADDRESS', '127.0.0.1:7233');
}

export async function connectClient(address = temporalAddress()): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 5000 });
  } catch (err) {
    throw new Error(
      `cannot reach the Temporal server at ${address}: ${(err as Error).message}. ` +
        'Start one with `crawl dev-server`, or set TEMPORAL_ADDRESS.',
    );
  }
  return new Client({ connection, namespace: DEFAULT_NAMESPACE });
}

export function connectWorker(address = temporalAddress()): Promise<NativeConnection> {
  return NativeConnection.connect({ address });
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
