import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import { errorText } from '../shared/errorText';

/** How to reach the operator's Temporal server: what Connection and NativeConnection take. */
export interface ConnectionSettings {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

export const DEFAULT_ADDRESS = '127.0.0.1:7233';

const TRUE = /^(1|true|yes)$/i;

/**
 * The operator's server from the environment, with the Temporal CLI's variables for TLS, mTLS
 * and API keys (TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH / _DATA, TEMPORAL_TLS_CLIENT_KEY_PATH
 * / _DATA, TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA, TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY,
 * TEMPORAL_GRPC_META_*), read by Temporal's own @temporalio/envconfig, so that one environment
 * means the same to `crawl` and to `temporal`. Not the CLI's config file: `crawl run` starts its
 * embedded server unless TEMPORAL_ADDRESS is set, and an address from a file would have sent
 * `crawl status` to another server than the crawl's. An empty variable counts as unset (a compose
 * file passes unset ones on as empty), as everywhere in `crawl`.
 */
export function connectionSettings(env: NodeJS.ProcessEnv = process.env): ConnectionSettings {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v.trim() !== '') vars[k] = v;
  const pair = ['CERT', 'KEY'].map((part) => vars[`TEMPORAL_TLS_CLIENT_${part}_PATH`] ?? vars[`TEMPORAL_TLS_CLIENT_${part}_DATA`]);
  // The library would connect without a client certificate when one half is missing.
  if ((pair[0] === undefined) !== (pair[1] === undefined)) {
    throw new Error('TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA) and TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA) go together: mTLS needs the certificate and its key');
  }
  // Ignored by the TypeScript SDK, which always verifies the server's name: connecting anyway would look like a setting that worked.
  if (TRUE.test(vars.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION ?? '')) {
    throw new Error('TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported here (the server\'s name is always verified): set TEMPORAL_TLS_SERVER_NAME to a name its certificate holds');
  }
  let options;
  try {
    options = loadClientConnectConfig({ disableFile: true, overrideEnvVars: vars }).connectionOptions;
  } catch (err) {
    throw new Error(`cannot read the Temporal connection settings (TEMPORAL_TLS_*): ${errorText(err)}`);
  }
  return {
    address: options.address ?? DEFAULT_ADDRESS,
    ...(options.tls !== undefined && options.tls !== null ? { tls: options.tls } : {}),
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey as string } : {}),
    ...(options.metadata !== undefined ? { metadata: options.metadata as Record<string, string> } : {}),
  };
}
