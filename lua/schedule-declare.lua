--[[
  schedule-declare: a process declares the schedules its code holds
  (`@Task({ schedule })`), at boot and then every minute, and says which code
  schedules of its queues its code does not hold.

  Several versions of an application may run side by side (a rolling
  deploy), each declaring its own definition of a schedule, or none. Each
  declared form (a definition's digest, or '-' for "not in my code") is kept
  in the schedule's hash as `decl:<digest>` = `firstSeen|lastSeen`, with its
  definition in `spec:<digest>`. The form in force is the one first seen
  last (the newest version's), among the forms still declared: one whose
  lastSeen is more than `staleMs` before the latest declaration of any form
  is dropped (its processes are gone). So during a rollout the new version's
  form wins at its first boot and stays in force whatever the old processes
  declare or however often they restart (their form was seen first long
  ago): no flapping. When the form in force changes, the definition is
  replaced and its next slot left to plan (after the last slot fired: no slot
  fires twice); when it is '-', the schedule stops (it leaves the due index)
  and, once no other form is declared, its hash is deleted.

  A schedule made at run time (source 'api') is never changed or removed
  here: its id is reported back.

  KEYS      schedules, schedulePrefix, brokerWake (woken when a definition is
            put in force), codeSchedules (schedule-fire adds a code schedule it
            fires, so one a version before this index declared is found too)
            (lua/keys.mjs)

  ARGV[1]   staleMs       a form not declared for this long, while another was, is dropped
  ARGV[2]   Q             number of queues this process's module declares
  ARGV[3 .. 2+Q]          its queues: code schedules of these queues that it
                          does not declare are declared '-' (not in its code)
  then triples: id, digest, definition (JSON), queue

  Returns   the ids of the declared schedules that are the application's (source 'api').
  Complexity: O(C·F) for the C code schedules (never the run-time ones,
  however many) and their F fields.
]]
--- @include "includes/now"
--- @keys

local rcall = redis.call
local now = nowMs()
local staleMs = tonumber(ARGV[1])
local queueCount = tonumber(ARGV[2])
local queues = {}
for q = 1, queueCount do queues[ARGV[2 + q]] = true end
local conflicts = {}

-- Applies one declaration of form `form` (a digest, or '-') of schedule `id`.
local function declare(id, form, spec, queue)
  local key = schedulePrefix .. id
  if rcall('HGET', key, 'source') == 'api' then
    conflicts[#conflicts + 1] = id
    return
  end
  local field = 'decl:' .. form
  local seen = rcall('HGET', key, field)
  local first = seen and string.match(seen, '^(%d+)|')
  if not first then
    -- A new form is first seen after every other: later than all of them
    -- even within one ms or after the clock stepped back, so the order of
    -- first sights is the order of the declarations.
    local after = now
    local flat = rcall('HGETALL', key)
    for f = 1, #flat, 2 do
      if string.sub(flat[f], 1, 5) == 'decl:' then
        local a = tonumber(string.match(flat[f + 1], '^(%d+)|'))
        if a >= after then after = a + 1 end
      end
    end
    first = string.format('%d', after)
  end
  rcall('HSET', key, field, first .. '|' .. string.format('%d', now), 'source', 'code')
  rcall('SADD', codeSchedulesKey, id)
  if spec then rcall('HSET', key, 'spec:' .. form, spec, 'specQueue:' .. form, queue) end

  -- The forms still declared; the one first seen last is in force.
  local flat = rcall('HGETALL', key)
  local forms, latest = {}, 0
  for f = 1, #flat, 2 do
    if string.sub(flat[f], 1, 5) == 'decl:' then
      local a, b = string.match(flat[f + 1], '^(%d+)|(%d+)$')
      forms[#forms + 1] = { string.sub(flat[f], 6), tonumber(a), tonumber(b) }
      if tonumber(b) > latest then latest = tonumber(b) end
    end
  end
  local winner, count
  count = 0
  for _, d in ipairs(forms) do
    if d[3] < latest - staleMs then
      rcall('HDEL', key, 'decl:' .. d[1], 'spec:' .. d[1], 'specQueue:' .. d[1])
    else
      count = count + 1
      if not winner or d[2] > winner[2] or (d[2] == winner[2] and d[1] > winner[1]) then winner = d end
    end
  end
  local current = rcall('HGET', key, 'digest')
  if winner[1] == '-' then
    if count == 1 then
      rcall('DEL', key)
      rcall('ZREM', schedulesKey, id)
      rcall('SREM', codeSchedulesKey, id)
    elseif current then
      rcall('HDEL', key, 'def', 'digest', 'queue', 'next')
      rcall('ZADD', schedulesKey, '+inf', id)
    end
  elseif current ~= winner[1] then
    local def, defQueue = unpack(rcall('HMGET', key, 'spec:' .. winner[1], 'specQueue:' .. winner[1]))
    rcall('HSET', key, 'def', def, 'digest', winner[1], 'queue', defQueue, 'next', '')
    rcall('ZADD', schedulesKey, '0', id)
    rcall('ZADD', brokerWakeKey, '0', 'w')
  end
end

local declared = {}
for a = 3 + queueCount, #ARGV, 4 do
  declared[ARGV[a]] = true
  declare(ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
end

-- Code schedules of this process's queues that its code does not hold. An
-- id whose schedule is gone, or became the application's (upserted), leaves
-- the index here.
for _, id in ipairs(rcall('SMEMBERS', codeSchedulesKey)) do
  if not declared[id] then
    local source, queue = unpack(rcall('HMGET', schedulePrefix .. id, 'source', 'queue'))
    if source ~= 'code' then
      rcall('SREM', codeSchedulesKey, id)
    else
      -- A stopped schedule has no queue of its own: any form's tells.
      if not queue then
        local flat = rcall('HGETALL', schedulePrefix .. id)
        for f = 1, #flat, 2 do
          if string.sub(flat[f], 1, 10) == 'specQueue:' then queue = flat[f + 1] end
        end
      end
      if queue and queues[queue] then declare(id, '-', nil, nil) end
    end
  end
end
return conflicts
