--[[
  enqueue: store new task runs, each READY now or deferred until its due time.

  Atomic for the whole batch: either every run of the call is stored or, if
  the script fails, none is (validation happens in Node before the call).

  A new run is a record in the fresh hash (see includes/fresh): its enqueue
  time, ready score, lease override, due time, queue and payload, written for
  the whole batch in one call; status READY and 0 attempts are implied until
  an attempt settles.

  KEYS[1]   seq           STRING  counter: FIFO order within a priority
  KEYS[2]   brokerWake    ZSET    marker that wakes a broker to re-plan promotion
  KEYS[3]   runPrefix     (prefix of run HASH keys; run keys are derived from
                          it and the ids, and share its hash tag, hence its
                          slot: a bulk call would otherwise send a key per run)
  KEYS[4]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[5]   leases        HASH    run id → lease value (a run handed to an
                          idle consumer is leased here, see includes/idle)
  KEYS[6]   queuePrefix   (prefix of per-queue keys: an idle consumer's other
                          queues' idle sets are derived from it)
  KEYS[7]   inboxPrefix   (prefix of consumer inbox ZSETs, derived from the
                          idle consumer's id; all share the alias hash tag)
  KEYS[8..] per queue q, 7 keys each, in ARGV order:
            ready ZSET, deferred ZSET, wake ZSET, stats HASH,
            metrics prefix (per-minute bucket HASHes, see includes/metrics),
            running ZSET, idle ZSET (see includes/idle)

  ARGV[1]   Q             number of distinct queues
  ARGV[2 .. 1+Q]          queue names
  ARGV[2+Q] P             number of distinct option sets in the call
  then P option sets, 6 values each: queue index (1-based), priority
            (-100..100), run at (epoch ms, 0 = none), delay (ms, 0 = none),
            lease TTL override (ms, 0 = backend default), check (1 = the
            caller chose the ids: store each only if it is new; 0 = fresh ids
            Threadmill generated, which cannot exist yet)
  then the items, in order, in groups of either form:
            +  one value: consecutive items joined by newlines,
               `id\nset\npayload\nid\nset\npayload...` (set: the option set
               index, 1-based; payload: JSON), for ids and payloads without
               a newline (one value for the call instead of three per run:
               each value costs the client and Redis its own encoding)
            =  id, option set index, payload: one item
            (runs of a bulk call mostly share one option set: 3 values per
            run instead of 8)

  Returns   { now, skipped_1, ... }: the positions (1-based) of the items
            not stored because a run with that id already existed
            (idempotent enqueue: nothing is written for that item); every
            other item was stored. A bulk call of new ids so gets two values
            back, not one per run.

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/fresh"
--- @include "includes/idle"

-- Ready score = -priority * 2^44 + seq: higher priority pops first, FIFO
-- within a priority, and the value stays exact in a double (|score| < 2^53).
-- The default priority 0 scores its sequence number alone: a short integer
-- that ZADD parses and the record holds for a few bytes, where a 16-digit
-- band base sent glibc's strtod down its slow multi-precision path.
local PRIORITY_SPAN = 17592186044416
local OPTION_FIELDS = 6
local rcall = redis.call

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local optionCount = tonumber(ARGV[2 + queueCount])
local optionBase = 3 + queueCount
local itemBase = optionBase + OPTION_FIELDS * optionCount
local runPrefix = KEYS[3]
local freshKey = KEYS[4]

-- The items: ids, option set indexes and payloads, from both forms.
local findIn, cut, byteAt = string.find, string.sub, string.byte
local itemIds, itemSets, itemPayloads = {}, {}, {}
local itemCount = 0
local a, argc = itemBase, #ARGV
while a <= argc do
  if ARGV[a] == '+' then
    local joined = ARGV[a + 1]
    a = a + 2
    local at = 1
    while true do
      local idEnd = findIn(joined, '\n', at, true)
      local setEnd = findIn(joined, '\n', idEnd + 1, true)
      local payloadEnd = findIn(joined, '\n', setEnd + 1, true)
      itemCount = itemCount + 1
      itemIds[itemCount] = cut(joined, at, idEnd - 1)
      -- A one-digit set index (almost always 1) is read without making a string of it.
      if setEnd == idEnd + 2 then
        itemSets[itemCount] = byteAt(joined, idEnd + 1) - 48
      else
        itemSets[itemCount] = tonumber(cut(joined, idEnd + 1, setEnd - 1))
      end
      itemPayloads[itemCount] = cut(joined, setEnd + 1, (payloadEnd or 0) - 1)
      if not payloadEnd then break end
      at = payloadEnd + 1
    end
  else
    itemCount = itemCount + 1
    itemIds[itemCount], itemSets[itemCount], itemPayloads[itemCount] = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
    a = a + 4
  end
end

-- Per option set: queue, score base, due time (0 = ready now), lease TTL, check.
local options = {}
for o = 1, optionCount do
  local a = optionBase + (o - 1) * OPTION_FIELDS
  local priority, runAt, delay = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local due = 0
  if runAt > 0 then due = runAt elseif delay > 0 then due = now + delay end
  if due <= now then due = 0 end
  local leaseTtl = tonumber(ARGV[a + 4])
  options[o] = {
    q = tonumber(ARGV[a]),
    scoreBase = -priority * PRIORITY_SPAN,
    due = due,
    leaseTtl = leaseTtl > 0 and leaseTtl or '',
    check = ARGV[a + 5] == '1',
  }
end

local seq = rcall('INCRBY', KEYS[1], itemCount) - itemCount
local readyAdds, deferredAdds, enqueued, records, added = {}, {}, {}, {}, {}
local anyDeferred = false
local reply = { now }
local nowText = tostring(now)

for i = 1, itemCount do
  local id = itemIds[i]
  local o = options[itemSets[i]]
  -- A caller-chosen id may exist already, fresh or with a run hash, or come
  -- twice in one call (concurrent enqueues coalesce): the first one wins.
  if o.check and (added[id] or rcall('HEXISTS', freshKey, id) == 1 or rcall('EXISTS', runPrefix .. id) == 1) then
    reply[#reply + 1] = i
  else
    local q = o.q
    -- Printed once, as an integer ('%d': concatenation would keep only 14
    -- significant digits, '%.0f' takes glibc's slow exact path), for both the
    -- record and the ready set: a number handed to ZADD is printed again.
    local score = string.format('%d', o.scoreBase + seq + i)
    -- Only ids a caller chose can repeat within a call.
    if o.check then added[id] = true end
    local r = #records
    records[r + 1] = id
    records[r + 2] = nowText .. '|' .. score .. '|' .. o.leaseTtl .. '|' .. (o.due > 0 and o.due or '') .. '|' ..
      ARGV[1 + q] .. '|' .. itemPayloads[i]
    if o.due > 0 then
      local d = deferredAdds[q]
      if not d then
        d = {}
        deferredAdds[q] = d
      end
      d[#d + 1] = o.due
      d[#d + 1] = id
      anyDeferred = true
    else
      local r = readyAdds[q]
      if not r then
        r = {}
        readyAdds[q] = r
      end
      r[#r + 1] = score
      r[#r + 1] = id
    end
    enqueued[q] = (enqueued[q] or 0) + 1
  end
end

inChunks('HSET', freshKey, records)

local wakeBroker = anyDeferred
for q = 1, queueCount do
  local k = 7 + 7 * (q - 1)
  local adds = readyAdds[q]
  -- A queue with nothing waiting may have an idle consumer: hand it the
  -- call's first ready run of the queue directly (includes/idle).
  if adds and rcall('ZCARD', KEYS[k + 1]) == 0 then
    local member = takeIdle(KEYS[k + 7], now)
    if member then
      local best = 1
      for a = 3, #adds, 2 do
        if tonumber(adds[a]) < tonumber(adds[best]) then best = a end
      end
      local id = adds[best + 1]
      local record
      for r = 1, #records, 2 do
        if records[r] == id then
          record = records[r + 1]
          break
        end
      end
      local ctx = {
        seq = KEYS[1], leases = KEYS[5], queuePrefix = KEYS[6], inboxPrefix = KEYS[7],
        running = KEYS[k + 6], queue = ARGV[1 + q], id = id, record = record, now = now,
      }
      if deliver(member, ctx) then wakeBroker = true end
      table.remove(adds, best + 1)
      table.remove(adds, best)
      countMinute(KEYS[k + 5], now, 'started', 1)
      if #adds == 0 then adds = nil end
    end
  end
  if adds then
    inChunks('ZADD', KEYS[k + 1], adds)
    rcall('ZADD', KEYS[k + 3], 0, 'w')
  end
  if deferredAdds[q] then
    inChunks('ZADD', KEYS[k + 2], deferredAdds[q])
  end
  if enqueued[q] then
    rcall('HINCRBY', KEYS[k + 4], 'enqueued', enqueued[q])
    countMinute(KEYS[k + 5], now, 'enqueued', enqueued[q])
  end
end
if wakeBroker then
  rcall('ZADD', KEYS[2], 0, 'w')
end

return reply
