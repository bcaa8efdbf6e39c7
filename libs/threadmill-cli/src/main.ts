#!/usr/bin/env node
// Placeholder replaced by the inspector's entry point.
export {};
