--[[
  time: Redis's clock, for a process to learn its offset to it
  (libs/threadmill/src/backend/redis/redis-clock.ts). A script rather than
  TIME so that a Cluster client asks the master of this backend's slot, whose
  clock the other scripts read.

  KEYS      workers (not touched: it routes the call to the slot) (lua/keys.mjs)

  Returns   now, epoch ms of Redis's clock

  Complexity: O(1).
]]
--- @include "includes/now"
--- @keys

return nowMs()
