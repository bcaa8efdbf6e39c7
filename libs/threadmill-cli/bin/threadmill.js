#!/usr/bin/env node
// The `threadmill` command. A checked-in shim, so npm links the bin on a
// fresh install before the TypeScript build exists.
await import('../dist/main.js');
