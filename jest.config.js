/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  // Integration tests start real servers; a generous default keeps slow CI machines green.
  testTimeout: 120_000,
  // Tests share the machine's 2 cores with Temporal servers they start.
  maxWorkers: 2,
  setupFiles: ['<rootDir>/test/support/setup.ts'],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
};
