/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  // Integration tests start real servers; a generous default keeps slow CI machines green.
  testTimeout: 120_000,
  // One test file at a time: tests share the machine's 2 cores with the Temporal servers they
  // start, and the end-to-end tests time arrivals at origins in their own process. A second file
  // running beside them (servers starting) stalled that event loop long enough to bunch four
  // arrivals of a 3/s source into one second (1 full run in about 10).
  maxWorkers: 1,
  setupFiles: ['<rootDir>/test/support/setup.ts'],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
};
