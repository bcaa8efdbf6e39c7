--[[
  upgrade: one bounded chunk of bringing a backend's keys to the storage
  layout this code writes, or report that they use a newer one. The client
  calls it until it answers done.

  The layout's version is the `layout` key. Keys written before it existed
  are layout 1 (an empty keyspace needs nothing and is marked at once). The
  steps from the version found to this code's are walks over keys
  (includes/upgrade-walks), each a chunk at a time. The first call of an
  upgrade marks the keys with the new version at once, so a process of an
  older version refuses them from then on, and records where the walk is in
  the `upgrade` HASH; every later call, from whichever process, takes the
  walk one chunk further from there, and the last one deletes the hash. So
  processes booting together share one walk, and each call is atomic and
  idempotent. While the hash exists the keys are part way between layouts:
  callers wait until it is gone before they serve (RedisTaskBackend.prepare),
  and runs stored under an older layout keep running after. A newer layout
  than this code writes is left untouched: the caller refuses to start (an
  older worker would misread what a newer one stored).

  KEYS      layout, leases, runPrefix, queues (registered by applications),
            queuePrefix, seq (set once any run was stored), upgrade
            (lua/keys.mjs)

  ARGV[1]   target        the layout version this code writes
  ARGV[2]   budget        most entries (leases, queues, index entries; a SCAN
                          page of keys counts a quarter) this call looks at

  Returns   { found, now, done (0/1), walk, looked }: the version the upgrade
            started from (1 when unmarked, 0 for keys that never stored a
            run), the version the keys are marked with (found, when newer
            than target), whether the upgrade is complete, the walk it is at
            (1 leases, 2 idle registrations, 3 successful sets, 4 successful
            lists) and the entries this call looked at.

  Complexity: O(budget) entries, each O(1) or O(log N); a SCAN page
  O(budget) keys.
]]
--- @include "includes/upgrade-walks"
--- @keys

local target, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local marked = redis.call('GET', layoutKey)
local found = tonumber(marked or '1')
if found > target then return { found, found, 1, 0, 0 } end

-- The version each walk completes, in order.
local WALKS = { 2, 2, 3, 4 }
local s = redis.call('HMGET', upgradeKey, 'from', 'walk', 'cursor', 'pending', 'key', 'left')
local w
if s[1] then
  w = { from = tonumber(s[1]), walk = tonumber(s[2]), cursor = s[3], pending = s[4], key = s[5], left = s[6] }
else
  if not marked and redis.call('EXISTS', seqKey) == 0 then
    redis.call('SET', layoutKey, ARGV[1])
    return { 0, target, 1, 0, 0 }
  end
  if found == target then return { found, found, 1, 0, 0 } end
  local first = 1
  while WALKS[first] and WALKS[first] <= found do first = first + 1 end
  w = { from = found, walk = first, cursor = '0', pending = '', key = '', left = '' }
end
-- From the first call on, a process of an older layout refuses these keys.
redis.call('SET', layoutKey, ARGV[1])

local function step(left)
  if w.walk == 1 then return upgradeLeases(w, left, leasesKey, runPrefix) end
  if w.walk == 2 then return dropIdleRegistrations(w, left, queuesKey, queuePrefix) end
  if w.walk == 3 then return walkSuccessfulIndexes(w, left, queuePrefix, 'zset', zsetToList) end
  return walkSuccessfulIndexes(w, left, queuePrefix, 'list', cutFinishTimes)
end

local looked = 0
while w.walk <= #WALKS and WALKS[w.walk] <= target and looked < budget do
  local n, ended = step(budget - looked)
  looked = looked + math.max(n, 1)
  if ended then
    w.walk, w.cursor, w.pending, w.key, w.left = w.walk + 1, '0', '', '', ''
  end
end

local done = not (w.walk <= #WALKS and WALKS[w.walk] <= target)
if done then
  redis.call('DEL', upgradeKey)
else
  redis.call('HSET', upgradeKey, 'from', w.from, 'walk', w.walk, 'cursor', w.cursor, 'pending', w.pending,
    'key', w.key, 'left', w.left)
end
return { w.from, target, done and 1 or 0, w.walk, looked }
