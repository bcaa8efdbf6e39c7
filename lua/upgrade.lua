--[[
  upgrade: bring a backend's keys to the storage layout this code writes, or
  report that they use a newer one.

  The layout's version is the `layout` key. Keys written before it existed
  are layout 1 (an empty keyspace needs nothing and is marked at once). Each
  step below takes the keys one version up, atomically and idempotently, so
  that processes booting together may all run it; runs stored under an older
  layout keep running after the upgrade. A newer layout than this code writes
  is left untouched: the caller refuses to start (an older worker would
  misread what a newer one stored).

  KEYS[1]   layout        STRING  the layout's version
  KEYS[2]   leases        HASH    run id → lease value
  KEYS[3]   runPrefix     (prefix of run HASH keys, which share its slot)
  KEYS[4]   queues        SET     queue names registered by applications
  KEYS[5]   queuePrefix   (prefix of per-queue keys)
  KEYS[6]   seq           STRING  the FIFO counter: set once any run was stored

  ARGV[1]   target        the layout version this code writes

  Returns   { found, now }: the version found (1 when unmarked, 0 for keys
            that never stored a run) and the version the keys are at after
            this call (found, when newer than target)

  Complexity: O(L + Q + K + S) for L leases held, Q registered queues, and,
  once from layout 2 and once from layout 3: K keys of the backend (scanned)
  and S successful runs kept (converted).
]]

local target = tonumber(ARGV[1])
local marked = redis.call('GET', KEYS[1])
if not marked and redis.call('EXISTS', KEYS[6]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1])
  return { 0, target }
end
local found = tonumber(marked or '1')
if found >= target then return { found, found } end

-- 1 → 2. Lease values gain a started flag (`token|claimedAt|attempt|
-- recoveries|started|worker`): a lease under which a suspect recorded its
-- start (the run hash's `startedToken`) is started; any other held lease is
-- not, so its expiry hands the run back without charging it. Direct delivery
-- is gone: the idle registrations go (inboxes and claim records expire on
-- their own within a minute; a run an inbox held is leased, and comes back
-- when its lease expires).
if found < 2 then
  local leases = redis.call('HGETALL', KEYS[2])
  for j = 1, #leases, 2 do
    local id, value = leases[j], leases[j + 1]
    local token, rest = string.match(value, '^([^|]*)|([^|]*|[^|]*|[^|]*|".*)$')
    if token then
      local started = redis.call('HGET', KEYS[3] .. id, 'startedToken') == token and '1' or '0'
      local claimedAt, attempt, recoveries, worker = string.match(rest, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
      redis.call('HSET', KEYS[2], id,
        token .. '|' .. claimedAt .. '|' .. attempt .. '|' .. recoveries .. '|' .. started .. '|' .. worker)
    end
  end
  for _, queue in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    redis.call('DEL', KEYS[5] .. queue .. ':idle')
  end
end

-- The successful index of every queue, registered or not (a queue only ever
-- named by a producer's enqueue may have finished runs), whose Redis type is
-- `type`: found by a SCAN of the backend's keys.
local function successfulIndexes(type)
  local keys, cursor = {}, '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', KEYS[5] .. '*:successful', 'COUNT', 1000, 'TYPE', type)
    cursor = page[1]
    for _, key in ipairs(page[2]) do keys[#keys + 1] = key end
  until cursor == '0'
  return keys
end

-- 2 → 3. A run that succeeds in the attempt that took it from its fresh
-- record is kept as a field of the `done` hash (includes/done) instead of a
-- run hash; runs settled before keep their run hashes, which every reader of
-- layout 3 still reads. Each registered queue's successful index becomes a
-- LIST of `finishedAt|id` entries (includes/successful-index), in finish
-- order: about a microsecond per finished run, once. The mark keeps a
-- layout-2 process from booting against these keys, as it would not see
-- done records (a run it would report missing, an id it would enqueue twice).
if found < 3 then
  for _, key in ipairs(successfulIndexes('zset')) do
    local scored = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    redis.call('DEL', key)
    local entries = {}
    for j = 1, #scored, 2 do
      entries[#entries + 1] = string.format('%d', tonumber(scored[j + 1])) .. '|' .. scored[j]
      if #entries == 1000 then
        redis.call('RPUSH', key, unpack(entries))
        entries = {}
      end
    end
    if #entries > 0 then redis.call('RPUSH', key, unpack(entries)) end
  end
end

-- 3 → 4. A successful index entry is the run's id alone (its finish time
-- is in its done record or run hash: includes/successful-index), and a done
-- record holds its claim time relative to its finish time and its worker
-- unquoted (includes/done; layout-3 records read the same and are left as
-- they are). Each list is rotated through once, a page at a time: its
-- `finishedAt|` prefixes cut, its order kept. Runs of a task with a result
-- TTL of its own are kept in indexes of their TTL class
-- (includes/result-classes), which no key of layout 3 is. The mark keeps a
-- layout-3 process from booting against these keys: it would read a list
-- entry as a time and an id and a new done record's fields wrongly, would not
-- see the class indexes, and its requeue of a failed run in one would leave
-- the run's entry there, for a trim to remove the requeued run with it.
if found < 4 then
  for _, key in ipairs(successfulIndexes('list')) do
    local left = redis.call('LLEN', key)
    while left > 0 do
      local entries = redis.call('LPOP', key, math.min(left, 1000))
      for j = 1, #entries do entries[j] = string.gsub(entries[j], '^%d+|', '', 1) end
      redis.call('RPUSH', key, unpack(entries))
      left = left - #entries
    end
  end
end

redis.call('SET', KEYS[1], ARGV[1])
return { found, target }
