-- A finished index trims from its oldest entries and stops at the first that
-- has not expired, so every entry of one index must have the same TTL. The
-- runs of the module's default TTL of their outcome are in the queue's
-- `successful` LIST and `failed` ZSET, as ever; those of a task with a TTL
-- of its own go to one index per TTL class (`<index key>:<ttl>`, ttl in ms),
-- which acknowledgements derive from the declared default index, so it
-- shares its hash tag. Each class in use is a member of the queue's
-- `result-classes` SET (`successful:<ttl>` or `failed:<ttl>`): added by every
-- acknowledgement that appends to the class's index, removed only by a trim
-- (or a purge's last chunk) that finds the index empty. So a class index that holds runs is always a
-- member, and every reader (trims, counts, listings, requeue, purge) finds it.
-- The TTL is in the key: an index is trimmed exactly for it, whatever TTLs
-- the process trimming it was configured with.

-- The index key of class member `member` (`successful:<ttl>` or
-- `failed:<ttl>`) of the queue whose default indexes are `successfulKey` and
-- `failedKey`, with its outcome and TTL (ms).
local function classKey(member, successfulKey, failedKey)
  local outcome, ttl = string.match(member, '^(%a+):(%d+)$')
  local base = outcome == 'successful' and successfulKey or failedKey
  return base .. ':' .. ttl, outcome, tonumber(ttl)
end
