import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run the library from source; worker processes they spawn run the build.
    alias: [
      { find: /^@threadmill\/nestjs$/, replacement: src('./libs/threadmill/src/index.ts') },
      { find: /^@threadmill\/nestjs\/testing$/, replacement: src('./libs/threadmill/src/testing/index.ts') },
      { find: /^@threadmill\/demo-tasks$/, replacement: src('./libs/demo-tasks/src/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.spec.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
