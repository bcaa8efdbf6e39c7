--[[
  flowStore: store a flow's nodes (docs/flows.md; includes/flow-settle for
  the layout), atomically: every node of the call or none.

  A flow too large for one call within Redis's script time comes in
  several: `part` calls, numbered, then `seal` calls. Until the first seal,
  no node of the flow is in any segment a claim reads (its nodes without
  dependencies wait in the flow's `roots` list), so no node runs before the
  flow is whole; the seals ready them, a page each. A part resent (its reply
  lost) is recognised by its number and writes nothing again; a seal resent
  readies the next page, or nothing.

  KEYS      seq, brokerWake, runPrefix, flowPrefix, queuePrefix (each
            queue's ready, deferred, wake, stats, metrics, waiting,
            flowed and grouped keys are derived from it), flow, queues
            (lua/keys.mjs)

  ARGV[1]   phase         'whole' (every node, sealed), 'part' or 'seal'
  ARGV[2]   part          the part's number (1, 2, ...); for 'whole' 1; for
                          'seal' how many roots to ready
  ARGV[3]   Q             number of distinct queues of the call
  ARGV[4 .. 3+Q]          queue names
  then per node, 11 values: id, queue index, priority, run at (epoch ms, 0 =
            none), delay (ms, 0 = none), lease TTL override (ms, 0 = none),
            limit group ('' = none), name, dependencies (`<id>:<policy>,...`,
            '' = none), dependents (its `then`: `<id>:<policy>,...`, ''
            = none; the client knows the whole flow, so no node's record
            is read back and rewritten when its dependents come in a
            later part), payload

  Returns   { now, 1 } when stored; { now, 0 } when the flow (or this part)
            was stored already, and nothing was written; for a seal, { now,
            roots still to ready }.

  Cost: per node a run hash (HSET) and a field of the flow hash, and per
  edge one entry in each end's record (the dependency's `then`, the
  dependent's `e:` field), written as the client encoded them: O(nodes)
  commands whatever the edges, plus O(log N) per node placed in a set.
]]
--- @include "includes/now"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/flow-place"
--- @include "includes/flow-settle"

local rcall = redis.call
local format = string.format
local PRIORITY_SPAN = 17592186044416
local NODE_FIELDS = 11

local now = nowMs()
local nowText = format('%d', now)
local phase, part = ARGV[1], tonumber(ARGV[2])
local queueCount = tonumber(ARGV[3])
--- @keys
local rootsKey = flowKey .. ':roots'

local stage = rcall('HMGET', flowKey, 'state', 'parts')
if phase == 'seal' then
  -- The flow is whole once its last part is in: the seal readies its roots a
  -- bounded page at a time (ARGV[2]: the page's size), the first call setting
  -- it RUNNING; the caller repeats until none is left.
  if stage[1] ~= 'STAGING' and stage[1] ~= 'RUNNING' then return { now, 0 } end
  rcall('HSET', flowKey, 'state', 'RUNNING')
  local fx = { now = now, queuePrefix = queuePrefix, deferred = false }
  local roots = rcall('LPOP', rootsKey, ARGV[2]) or {}
  for i = 1, #roots do
    local nodeKey = runPrefix .. roots[i]
    local f = rcall('HMGET', nodeKey, 'status', 'queue', 'score', 'runAfter')
    -- A root cancelled (or dequeued) since its part stays as it is.
    if f[1] == 'WAITING' then readyFlowNode(fx, roots[i], nodeKey, f) end
  end
  if fx.deferred then rcall('ZADD', brokerWakeKey, '0', 'w') end
  return { now, rcall('LLEN', rootsKey) }
end
if phase == 'whole' and stage[1] then return { now, 0 } end
if phase == 'part' and (stage[1] and stage[1] ~= 'STAGING' or tonumber(stage[2] or '0') >= part) then
  return { now, 0 }
end

local nodeCount = (#ARGV - 3 - queueCount) / NODE_FIELDS
local seq = rcall('INCRBY', seqKey, format('%d', nodeCount)) - nodeCount
local flowId = string.sub(flowKey, #flowPrefix + 1)
-- Per queue: ready and deferred adds (score, id pairs), waiting ids, count, grouped.
local ready, deferred, waiting, enqueued, grouped = {}, {}, {}, {}, {}
for q = 1, queueCount do ready[q], deferred[q], waiting[q], enqueued[q] = {}, {}, {}, 0 end
local flowFields = {}
local roots = {}
local base = 4 + queueCount
for n = 1, nodeCount do
  local a = base + (n - 1) * NODE_FIELDS
  local id, q, priority = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local runAt, delay, leaseTtl = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local group, name, deps, dependents, payload = ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10]
  local queue = ARGV[3 + q]
  local score = format('%d', -priority * PRIORITY_SPAN + seq + n)
  local due = 0
  if runAt > 0 then due = runAt elseif delay > 0 then due = now + delay end
  local fields = { 'payload', payload, 'queue', queue, 'score', score, 'enqueuedAt', nowText, 'flow', flowId,
    'then', dependents }
  if leaseTtl > 0 then fields[#fields + 1], fields[#fields + 2] = 'leaseTtl', format('%d', leaseTtl) end
  if due > now then fields[#fields + 1], fields[#fields + 2] = 'runAfter', format('%d', due) end
  if group ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'group', group
    grouped[q] = true
  end
  local pending = 0
  if deps ~= '' then pending = select(2, string.gsub(deps, ',', ',')) + 1 end
  flowFields[#flowFields + 1] = 'n:' .. id
  flowFields[#flowFields + 1] = '|' .. name .. '|' .. queue .. '|'
  if pending > 0 then
    fields[#fields + 1], fields[#fields + 2] = 'status', 'WAITING'
    fields[#fields + 1], fields[#fields + 2] = 'pending', format('%d', pending)
    flowFields[#flowFields + 1] = 'e:' .. id
    flowFields[#flowFields + 1] = deps
    local w = waiting[q]
    w[#w + 1] = nowText
    w[#w + 1] = id
  elseif phase == 'part' then
    -- Readied by the seal.
    fields[#fields + 1], fields[#fields + 2] = 'status', 'WAITING'
    roots[#roots + 1] = id
  elseif due > now then
    local d = deferred[q]
    d[#d + 1] = format('%d', due)
    d[#d + 1] = id
  else
    local r = ready[q]
    r[#r + 1] = score
    r[#r + 1] = id
  end
  rcall('HSET', runPrefix .. id, unpack(fields))
  enqueued[q] = enqueued[q] + 1
end
rcall('HINCRBY', flowKey, 'nodes', format('%d', nodeCount))
rcall('HINCRBY', flowKey, 'open', format('%d', nodeCount))
flowFields[#flowFields + 1] = 'createdAt'
flowFields[#flowFields + 1] = stage[1] and rcall('HGET', flowKey, 'createdAt') or nowText
flowFields[#flowFields + 1] = 'state'
flowFields[#flowFields + 1] = phase == 'part' and 'STAGING' or 'RUNNING'
flowFields[#flowFields + 1] = 'parts'
flowFields[#flowFields + 1] = format('%d', part)
inChunks('HSET', flowKey, flowFields)
inChunks('RPUSH', rootsKey, roots)

local adds = { ready = ready, deferred = deferred, waiting = waiting, enqueued = enqueued, grouped = grouped }
local anyDeferred = placeFlowNodes(adds, queueCount, queuePrefix, queuesKey, now)
if anyDeferred then rcall('ZADD', brokerWakeKey, '0', 'w') end
return { now, 1 }
