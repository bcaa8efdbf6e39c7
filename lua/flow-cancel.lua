--[[
  flowCancel: cancel a flow (docs/flows.md): every node without an outcome
  ends CANCELLED, as `cancel` ends a run (includes/cancel-run): a WAITING or
  pending node leaves its set, a running node loses its lease (its holder's
  next renewal answers `cancelled` and its attempt aborts). Its dependents
  are cancelled with it, not failed by its edges.

  A flow of many nodes is cancelled in several calls, each a page of the
  flow hash (HSCAN): the first marks the flow cancelled, and each call
  cancels what its page holds that is still open; the caller repeats until
  the cursor comes back '0'. A node settling between two calls settles as
  usual (its edges apply: its dependents not cancelled yet are then settled
  by policy, which the next page finds settled).

  KEYS      flow, runPrefix, queuePrefix, leases, fresh, waiting, finished
            (lua/keys.mjs)

  ARGV[1]   cursor        '0' for the first call, then what the last returned
  ARGV[2]   cancelledTtl  ms a cancelled run is kept (0 = deleted once published)
  ARGV[3]   flowTtl       ms the flow is kept once it ends

  Returns   { next cursor ('0': done), nodes this call cancelled, the flow's
            state } or { '0', 0, '' } when there is no such flow

  Complexity: O(page) per call, plus O(log N) per node cancelled.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/done"
--- @include "includes/cancel-run"
--- @include "includes/finished"
--- @include "includes/metrics"
--- @include "includes/flow-settle"
--- @keys

local state = redis.call('HGET', flowKey, 'state')
if not state then return { '0', 0, '' } end
if state == 'SUCCESSFUL' or state == 'FAILED' or state == 'CANCELLED' then return { '0', 0, state } end
redis.call('HSET', flowKey, 'cancelled', '1')
-- A flow not sealed yet, or not whole: roots not readied stay unreadied.
redis.call('DEL', flowKey .. ':roots')
local now = nowMs()
local nowText = string.format('%d', now)
local cancelledTtl = tonumber(ARGV[2])
local fx = flowContext(now, runPrefix, string.sub(flowKey, 1, 0), queuePrefix, waitingKey, finishedKey, cancelledTtl,
  tonumber(ARGV[3]))
local page = redis.call('HSCAN', flowKey, ARGV[1], 'MATCH', 'n:*', 'COUNT', 500)
local entries, cancelled = page[2], 0
for i = 1, #entries, 2 do
  local id, entry = string.sub(entries[i], 3), entries[i + 1]
  local name, queue = string.match(entry, '^|([^|]*)|([^|]*)|')
  if name then
    -- Open: no outcome recorded yet.
    local nodeKey = runPrefix .. id
    local qp = queuePrefix .. queue .. ':'
    local record = redis.call('HGET', freshKey, id)
    local status = record and 'READY' or redis.call('HGET', nodeKey, 'status')
    local lease = redis.call('HGET', leasesKey, id)
    if lease then status = 'RUNNING' end
    -- A node's run is a run hash from its enqueue: a node without one is gone
    -- (removed by a path that did not settle it), and only its entry ends.
    if status or redis.call('EXISTS', nodeKey) == 1 then
      local k = { run = nodeKey, leases = leasesKey, fresh = freshKey, ready = qp .. 'ready',
        deferred = qp .. 'deferred', running = qp .. 'running', withdrawn = qp .. 'withdrawn',
        groupPrefix = qp .. 'group:', groups = qp .. 'groups', parked = qp .. 'parked', wake = qp .. 'wake',
        flowWaiting = qp .. 'waiting' }
      local fields = takeForCancel(k, id, record, status or 'READY', lease, nowText)
      redis.call('HSET', nodeKey, unpack(fields))
      -- Its edges go unapplied: its dependents are cancelled too.
      redis.call('HDEL', nodeKey, 'then')
      redis.call('HINCRBY', qp .. 'stats', 'cancelled', 1)
      countMinute(qp .. 'metrics:', now, 'cancelled', 1)
      if redis.call('EXISTS', waitingKey) == 1 and redis.call('ZSCORE', waitingKey, id) then
        publishFinished(waitingKey, finishedKey, now, id, redis.call('HGETALL', nodeKey))
      end
      if cancelledTtl > 0 then
        redis.call('ZADD', qp .. 'cancelled', nowText, id)
      else
        redis.call('DEL', nodeKey)
      end
      cancelled = cancelled + 1
    end
    redis.call('HSET', flowKey, entries[i], 'C|' .. name .. '|' .. queue .. '|')
    redis.call('HINCRBY', flowKey, 'failed', 1)
    if redis.call('HINCRBY', flowKey, 'open', -1) == 0 then finishFlow(fx, flowKey) end
  end
end
return { page[1], cancelled, redis.call('HGET', flowKey, 'state') or 'CANCELLED' }
