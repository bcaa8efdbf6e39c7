-- A queue's successful index (layout 3) is a LIST of `finishedAt|id`
-- entries in the order acknowledgements appended them, which is finish
-- order: each appends with the Redis clock of its own call, after every
-- earlier call's. An RPUSH costs no search and a listpack
-- entry a fraction of a skiplist node, where a ZADD of a batch of equal
-- scores compared members down the skiplist. Should the Redis clock step
-- back, an entry may come after a later-stamped one: trimming stops at the
-- first entry not yet expired, so a run is kept at most that step longer,
-- never shorter, and never skipped.

-- The finish time and id of a successful index entry.
local function successfulEntry(entry)
  local bar = string.find(entry, '|', 1, true)
  return tonumber(string.sub(entry, 1, bar - 1)), string.sub(entry, bar + 1)
end
