#!/usr/bin/env node
// The `threadmill` command. A checked-in shim, so npm links the bin on a
// fresh install before the TypeScript build exists.
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
try {
  await import(entry.href);
} catch (error) {
  // In a clone of the repository the CLI runs from its build output; a module
  // missing inside it (a dependency) is another error and is rethrown.
  const unbuilt = String(error?.message).startsWith(`Cannot find module '${fileURLToPath(entry)}'`);
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !unbuilt) throw error;
  console.error('threadmill: the CLI is not built yet (no dist/main.js); run `npm run build` at the repository root.');
  process.exit(1);
}
