--- @include "includes/finished"

-- The finished feed (includes/effects; includes/finished, docs/storage.md,
-- "Waiting for a result"). A run somebody waits on (registered in `waiting`)
-- is published to `finished` with its fields when an outcome settles it (S,
-- F, f, Q, q; not a retry), in this call, and its registration ends. With a
-- TTL of 0 such a run is settled into its run hash all the same, so that its
-- fields exist to publish, and then deleted like the others (no index entry).
-- Waiting costs a call one EXISTS when nobody waits; otherwise one
-- ZREMRANGEBYSCORE and one ZMSCORE for the batch, and per registered run that
-- settles, its fields read back and one entry (publishFinished, called by
-- the core for those runs only).
local feedEffect = {
  -- Which runs of the batch somebody waits on (ack.waitedOf, false for the
  -- others): nobody, at the cost of one EXISTS, unless some registration is
  -- live. Expired ones go first, so the key disappears once nobody waits.
  read = function(ack)
    if redis.call('EXISTS', ack.waitingKey) == 1 then
      redis.call('ZREMRANGEBYSCORE', ack.waitingKey, '-inf', '(' .. ack.nowText)
      ack.waitedOf = inChunks('ZMSCORE', ack.waitingKey, ack.ids)
    end
  end,
}
