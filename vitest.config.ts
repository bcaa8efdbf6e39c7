import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run the library from source; worker processes they spawn run the build.
    alias: [
      { find: /^@threadmill\/nestjs$/, replacement: src('./libs/threadmill/src/index.ts') },
      { find: /^@threadmill\/nestjs\/testing$/, replacement: src('./libs/threadmill/src/testing/index.ts') },
      { find: /^@threadmill\/nestjs\/microservices$/, replacement: src('./libs/threadmill/src/transport/index.ts') },
      { find: /^@threadmill\/demo-tasks$/, replacement: src('./libs/demo-tasks/src/index.ts') },
      {
        find: /^@threadmill\/nestjs\/(dashboard|metrics|health)$/,
        replacement: src('./libs/threadmill/src/$1/index.ts'),
      },
    ],
  },
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit+integration',
          include: ['test/unit/**/*.spec.ts', 'test/integration/**/*.spec.ts', 'apps/*/test/**/*.spec.ts'],
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Real processes, signals and faults: one file at a time, so timing
        // assertions are not starved by other files on a 2-core machine.
        extends: true,
        test: {
          name: 'e2e+faults',
          include: ['test/e2e/**/*.spec.ts', 'test/faults/**/*.spec.ts'],
          // The apps' own specs, run by each app's runner in package-install.spec.ts.
          exclude: [...configDefaults.exclude, 'test/e2e/packaged-app/**'],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
