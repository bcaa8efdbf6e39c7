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
 * 3: a run that succeeds in the attempt that took it from its fresh record
 *    is a field of the `done` hash, not a run hash (`lua/includes/done.lua`).
 * 4: a successful index entry is the run's id alone, and a done record holds
 *    its claim time relative to its finish time: ids are ULIDs, and these
 *    trim a finished run's memory (docs/optimisations.md, step 53); runs of
 *    a task with a result TTL of its own are kept in finished indexes per
 *    TTL class (`lua/includes/result-classes.lua`).
 */
export const STORAGE_LAYOUT = 4;
