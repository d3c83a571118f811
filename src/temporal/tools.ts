import fs from 'node:fs';
import path from 'node:path';
import { envText } from '../shared/env';

/** Where the project's pinned Temporal binaries live and how to override them. */
export const PROJECT_ROOT = path.resolve(__dirname, '..', '..', ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []));
export const TOOLS_BIN = path.join(envText('CRAWL_TOOLS_DIR') ?? path.join(PROJECT_ROOT, '.tools'), 'bin');
export const SETUP_COMMAND = 'make setup   (or: bash scripts/setup-tools.sh)';

export type ToolName = 'temporal' | 'temporal-test-server';

const ENV_OVERRIDE: Record<ToolName, string> = {
  temporal: 'TEMPORAL_CLI_PATH',
  'temporal-test-server': 'TEMPORAL_TEST_SERVER_PATH',
};

export class MissingToolError extends Error {
  constructor(tool: ToolName, where: string, why: string) {
    super(
      `${tool} not found at ${where} (${why}). Install the pinned binaries with: ${SETUP_COMMAND}; ` +
        `or point ${ENV_OVERRIDE[tool]} at an existing binary.`,
    );
    this.name = 'MissingToolError';
  }
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Resolves a pinned binary: the environment override first, then .tools/bin.
 * Returns undefined only when CRAWL_ALLOW_SDK_DOWNLOAD=1, so that on a machine with internet
 * the SDK's own download can still be used; otherwise a missing binary is a clear error.
 */
export function resolveTool(tool: ToolName): string | undefined {
  const override = process.env[ENV_OVERRIDE[tool]];
  if (override) {
    if (!isExecutable(override)) throw new MissingToolError(tool, override, `${ENV_OVERRIDE[tool]} is set but is not an executable file`);
    return override;
  }
  const local = path.join(TOOLS_BIN, tool);
  if (isExecutable(local)) return local;
  if (process.env.CRAWL_ALLOW_SDK_DOWNLOAD === '1') return undefined;
  throw new MissingToolError(tool, local, 'the setup step has not run');
}
