--- @include "includes/chunks"
--- @include "includes/trim"
--- @include "includes/result-classes"

-- The finished index by TTL class (includes/effects; includes/trim,
-- includes/result-classes). A finished run is kept for its TTL (done record
-- or run hash, and index entry) and then removed with its index entry, by
-- the acknowledgements of its queue and by brokers (trim.lua): never one
-- without the other, so the finished indexes name exactly the finished runs
-- of their queue. An index holds the runs of one TTL: a call trims each index
-- it appended to. Runs kept for a TTL of their task's own cost one SADD per
-- call, queue and TTL class, beside their index's append and trim.

-- Expired finished runs one call removes per index at most: a backlog of
-- them (a queue quiet for a while) goes over several calls and broker passes.
local TRIM_PER_CALL = 200

-- Appends the values of an index entry (the id of a success, or finish
-- time and id of a failure) to the index of the TTL class of `ttl`
-- ms, its task's, of outcome `outcome` (successful, failed) of queue `q`
-- (in ack.classed[q]: class members in the order first met, and member →
-- entries); returns false, appending nothing, for a TTL of 0 (not kept).
-- Called by the core for such runs only.
local function keepOwn(ack, q, outcome, ttl, ...)
  if ttl == 0 then return false end
  local byClass = ack.classed[q]
  if not byClass then
    byClass = { members = {} }
    ack.classed[q] = byClass
  end
  local member = outcome .. ':' .. string.format('%d', ttl)
  local entries = byClass[member]
  if not entries then
    entries = {}
    byClass[member] = entries
    byClass.members[#byClass.members + 1] = member
  end
  for _, value in ipairs({ ... }) do entries[#entries + 1] = value end
  return true
end

-- Appends `entries` to finished index `key` of `outcome` (a list of ids for
-- successes, score and id pairs for failures) and trims it for `ttl`.
local function keepIn(ack, outcome, key, entries, ttl)
  inChunks(outcome == 'successful' and 'RPUSH' or 'ZADD', key, entries)
  trimIndex(outcome, key, ack.runPrefix, ack.doneKey, ack.now - ttl, TRIM_PER_CALL)
end

local indexEffect = {
  write = function(ack, q, k)
    if #ack.successful[q] > 0 then keepIn(ack, 'successful', k.successful, ack.successful[q], ack.successfulTtl) end
    if #ack.failed[q] > 0 then keepIn(ack, 'failed', k.failed, ack.failed[q], ack.failedTtl) end
    local byClass = ack.classed[q]
    if byClass then
      -- The class joins the queue's classes in the call that appends to its index.
      redis.call('SADD', k.resultClasses, unpack(byClass.members))
      for _, member in ipairs(byClass.members) do
        local key, outcome, ttl = classKey(member, k.successful, k.failed)
        keepIn(ack, outcome, key, byClass[member], ttl)
      end
    end
  end,
}
