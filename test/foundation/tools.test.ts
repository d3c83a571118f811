import { MissingToolError, resolveTool } from '../../src/temporal/tools';

describe('pinned tool resolution', () => {
  const saved = { ...process.env };
  afterEach(() => { process.env = { ...saved }; });

  it('names the setup command when an overridden binary is missing', () => {
    process.env.TEMPORAL_CLI_PATH = '/nonexistent/temporal';
    expect(() => resolveTool('temporal')).toThrow(MissingToolError);
    expect(() => resolveTool('temporal')).toThrow(/make setup/);
  });

  it('uses the override when it points at an executable', () => {
    process.env.TEMPORAL_TEST_SERVER_PATH = process.execPath;
    expect(resolveTool('temporal-test-server')).toBe(process.execPath);
  });

  it('names the setup command when the tools directory is empty', () => {
    delete process.env.TEMPORAL_CLI_PATH;
    process.env.CRAWL_TOOLS_DIR = '/nonexistent-tools';
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const tools = require('../../src/temporal/tools') as typeof import('../../src/temporal/tools');
      expect(() => tools.resolveTool('temporal')).toThrow(/not found at \/nonexistent-tools\/bin\/temporal.*make setup/);
    });
  });
});
