-- A queue's successful index is a LIST of run ids in the order
-- acknowledgements appended them, which is finish order: each appends with
-- the Redis clock of its own call, after every earlier call's. An RPUSH
-- costs no search and a listpack entry a fraction of a skiplist node, where a
-- ZADD of a batch of equal scores compared members down the skiplist.
--
-- An entry is the id alone (layout 4; layout 3 wrote `finishedAt|id`): its
-- finish time is the first field of its done record, or its run hash's
-- `finishedAt`, and only trimming asks for it, of the list's head. Should the
-- Redis clock step back, an entry may come after a later-stamped one:
-- trimming stops at the first entry not yet expired, so a run is kept at most
-- that step longer, never shorter, and never skipped.

-- When the successful run `id` finished (ms), from its done record (`done`,
-- or false when it has none) or else its run hash; -1 when neither holds it
-- (never the case while entry and run are removed together; such an entry
-- would be trimmed at once rather than hold up the ones behind it).
local function successfulFinishedAt(runPrefix, id, done)
  if done then return tonumber(string.match(done, '^%d+')) end
  return tonumber(redis.call('HGET', runPrefix .. id, 'finishedAt')) or -1
end
