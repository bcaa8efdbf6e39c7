--[[
  flowExtend: add runs to a running flow from one of its nodes, as Sidekiq
  Pro adds jobs to an open batch (docs/flows.md, "Chains and batches"): each
  new node runs now, and every dependent of the calling node that is still
  WAITING waits for the new nodes too, by the same edge policy as its edge
  from the caller. So a batch's callback runs after the runs its runs added.

  Fenced by the caller's lease: it holds (same token, deadline not passed)
  or nothing is written. The caller has not settled, so its dependents
  have not been settled by it: a dependent still WAITING cannot be readied
  before the new nodes settle.

  KEYS      runPrefix, flowPrefix, queuePrefix, leases, seq, brokerWake,
            queues (lua/keys.mjs)

  ARGV[1]   id            the calling node's run id
  ARGV[2]   token         its lease token
  ARGV[3]   Q             number of distinct queues of the new nodes
  ARGV[4 .. 3+Q]          queue names
  then per node, 9 values: id, queue index, priority, run at (epoch ms, 0 =
            none), delay (ms, 0 = none), lease TTL override (ms, 0 = none),
            limit group ('' = none), name, payload

  Returns   { now, 1 } when added; { now, 0 } when the caller's lease does
            not hold (nothing written); { now, -1 } when the caller is no
            flow node.

  Cost: per new node a run hash and a flow field; per dependent of the
  caller still WAITING, one HINCRBY and one rewrite of its `e:` field.
]]
--- @include "includes/now"
--- @include "includes/lease"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/flow-place"
--- @keys

local rcall = redis.call
local format = string.format
local PRIORITY_SPAN = 17592186044416
local NODE_FIELDS = 9

local now = nowMs()
local nowText = format('%d', now)
local callerId, token = ARGV[1], ARGV[2]
local queueCount = tonumber(ARGV[3])
local callerKey = runPrefix .. callerId
local caller = rcall('HMGET', callerKey, 'flow', 'then', 'queue')
if not caller[1] then return { now, -1 } end
local deadline = caller[3] and rcall('ZSCORE', queuePrefix .. caller[3] .. ':running', callerId)
if not leaseHolds(rcall('HGET', leasesKey, callerId), token, deadline, now) then return { now, 0 } end
local flowKey = flowPrefix .. caller[1]

-- The caller's dependents still WAITING: they wait for the new nodes too.
local edges, waitingDependents = {}, {}
for edge in string.gmatch(caller[2] or '', '[^,]+') do
  local dependent, policy = string.match(edge, '^(.*):(%a)$')
  if rcall('HGET', runPrefix .. dependent, 'status') == 'WAITING' then
    edges[#edges + 1] = edge
    waitingDependents[#waitingDependents + 1] = { dependent, policy }
  end
end
local dependentsText = table.concat(edges, ',')

local nodeCount = (#ARGV - 3 - queueCount) / NODE_FIELDS
local seq = rcall('INCRBY', seqKey, format('%d', nodeCount)) - nodeCount
local ready, deferred, waiting, enqueued, grouped = {}, {}, {}, {}, {}
for q = 1, queueCount do ready[q], deferred[q], waiting[q], enqueued[q] = {}, {}, {}, 0 end
local flowFields, ids = {}, {}
local base = 4 + queueCount
for n = 1, nodeCount do
  local a = base + (n - 1) * NODE_FIELDS
  local id, q, priority = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local runAt, delay, leaseTtl = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local group, name, payload = ARGV[a + 6], ARGV[a + 7], ARGV[a + 8]
  local queue = ARGV[3 + q]
  local score = format('%d', -priority * PRIORITY_SPAN + seq + n)
  local due = 0
  if runAt > 0 then due = runAt elseif delay > 0 then due = now + delay end
  local fields = { 'payload', payload, 'queue', queue, 'score', score, 'enqueuedAt', nowText, 'flow', caller[1],
    'then', dependentsText }
  if leaseTtl > 0 then fields[#fields + 1], fields[#fields + 2] = 'leaseTtl', format('%d', leaseTtl) end
  if group ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'group', group
    grouped[q] = true
  end
  if due > now then
    fields[#fields + 1], fields[#fields + 2] = 'runAfter', format('%d', due)
    local d = deferred[q]
    d[#d + 1] = format('%d', due)
    d[#d + 1] = id
  else
    local r = ready[q]
    r[#r + 1] = score
    r[#r + 1] = id
  end
  rcall('HSET', runPrefix .. id, unpack(fields))
  flowFields[#flowFields + 1] = 'n:' .. id
  flowFields[#flowFields + 1] = '|' .. name .. '|' .. queue .. '|'
  ids[#ids + 1] = id
  enqueued[q] = enqueued[q] + 1
end

for _, dependent in ipairs(waitingDependents) do
  rcall('HINCRBY', runPrefix .. dependent[1], 'pending', format('%d', nodeCount))
  local more = {}
  for i = 1, #ids do more[i] = ids[i] .. ':' .. dependent[2] end
  local current = rcall('HGET', flowKey, 'e:' .. dependent[1])
  local added = table.concat(more, ',')
  rcall('HSET', flowKey, 'e:' .. dependent[1], (current and current ~= '') and current .. ',' .. added or added)
end
rcall('HINCRBY', flowKey, 'nodes', format('%d', nodeCount))
rcall('HINCRBY', flowKey, 'open', format('%d', nodeCount))
inChunks('HSET', flowKey, flowFields)

local adds = { ready = ready, deferred = deferred, waiting = waiting, enqueued = enqueued, grouped = grouped }
local anyDeferred = placeFlowNodes(adds, queueCount, queuePrefix, queuesKey, now)
if anyDeferred then rcall('ZADD', brokerWakeKey, '0', 'w') end
return { now, 1 }
