import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.crawl-data/', 'coverage/', 'scratch/', 'crawl-demo/', 'crawl-out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node APIs, no I/O.
    files: ['src/workflows/**/*.ts', 'src/politeness/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{
          group: ['fs', 'node:*', 'http', 'https', 'net', 'dns', 'undici', 'sharp', '@aws-sdk/*', '**/activities/*', 'crypto', 'path', 'os', 'pino', '**/shared/log'],
          message: 'workflow and policy code must stay deterministic: no Node APIs or I/O (type imports are fine)',
          allowTypeImports: true,
        }],
      }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', 'bin/*'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } },
  },
);
