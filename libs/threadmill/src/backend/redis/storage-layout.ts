/**
 * The version of the Redis storage layout this version of Threadmill writes
 * (`docs/storage.md`). A backend's keys record theirs in the `layout` key;
 * `lua/upgrade.lua` brings older keys up to it at boot, and a newer one
 * makes the boot fail.
 *
 * 1: keys written before the layout had a version.
 * 2: lease tokens are call ids and leases record whether their attempt
 *    started; direct delivery (idle registrations, inboxes) is gone;
 *    finished runs have no TTL of their own.
 */
export const STORAGE_LAYOUT = 2;
