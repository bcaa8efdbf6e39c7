--- @include "includes/finished"
--- @include "includes/metrics"
--- @include "includes/chunks"

-- Flows (docs/flows.md; docs/storage.md, "Flows"). A flow's nodes are runs
-- with a run hash that names their flow (`flow`) and, until their first
-- outcome is applied here, the edges to their dependents (`then`: entries
-- `<dependent id>:<policy>`, '' for none). A node with dependencies waits
-- WAITING (`pending`: how many have not settled) in no segment but its
-- queue's `waiting` set, where no claim looks. The flow's hash
-- (`flow:<id>`) holds per node `n:<id>` = `<letter>|<name>|<queue>|<json>`
-- (the letter, result or error of its first outcome; '' while open), per
-- dependent `e:<id>` = its dependencies `<id>:<policy>,...`, and counts:
-- `nodes`, `open` (nodes without an outcome), `failed` (outcomes other than
-- a success).
--
-- What a dependency's outcome does to a WAITING dependent, by the edge's
-- policy (the rule `edgeEffect` of libs/threadmill/src/rules/flow-rules.ts
-- states in TypeScript): a success satisfies every edge; a failure (F,
-- a quarantine Q, a cancel C) fails the dependent under `f` (the default),
-- satisfies the edge under `i` (ignore: visible in its dependencies) and
-- `r` (remove: not listed), and readies the dependent at once under `c`
-- (continue). A dependent no longer WAITING (readied by a `continue` edge,
-- or cancelled) is not touched.
local function edgeEffect(policy, letter)
  if letter == 'S' or policy == 'i' or policy == 'r' then return 'satisfy' end
  if policy == 'c' then return 'ready' end
  return 'fail'
end

-- The context `fx` of a script that settles nodes: now, nowText, runPrefix,
-- flowPrefix, queuePrefix, waitingKey, finishedKey, failedTtl and flowTtl
-- (ms a finished flow's hash is kept; 0: deleted), and what it collects:
-- `dropped` (run keys to delete once every node is settled), `deferred`
-- (a readied node is due later: the caller wakes the broker) and
-- `readied` (the ids and queues of the nodes it readied: a purge removes
-- those of its own queue too).

-- Makes WAITING node `id` (its run hash `nodeKey`, fields f = { status,
-- queue, score, runAfter }) READY: into its queue's ready set by its score,
-- or deferred until its due time.
local function readyFlowNode(fx, id, nodeKey, f)
  local qp = fx.queuePrefix .. f[2] .. ':'
  redis.call('HSET', nodeKey, 'status', 'READY')
  redis.call('HDEL', nodeKey, 'pending')
  redis.call('ZREM', qp .. 'waiting', id)
  if fx.readied then fx.readied[#fx.readied + 1] = { id, f[2] } end
  if f[4] and tonumber(f[4]) > fx.now then
    redis.call('ZADD', qp .. 'deferred', f[4], id)
    fx.deferred = true
  else
    redis.call('ZADD', qp .. 'ready', f[3], id)
    redis.call('ZADD', qp .. 'wake', '0', 'w')
  end
end

-- Settles WAITING node `id` FAILED by its dependency `depId`'s outcome
-- `letter`, uncharged (it never started: attempts 0), as an attempt's
-- failure settles (its queue's failed index and counts, its waiters told).
-- Returns its error's JSON.
local function failFlowNode(fx, id, nodeKey, queue, depId, letter)
  local what = ({ F = 'FAILED', Q = 'QUARANTINED', C = 'CANCELLED' })[letter] or 'FAILED'
  local error = '{"errorClass":"DependencyFailedError","message":"Dependency ' .. depId .. ' ended ' .. what
    .. ' and its edge fails this node (onFailure: fail)","stack":"","attempt":0}'
  local qp = fx.queuePrefix .. queue .. ':'
  redis.call('HSET', nodeKey, 'status', 'FAILED', 'finishedAt', fx.nowText, 'errors', error)
  redis.call('HDEL', nodeKey, 'pending')
  redis.call('ZREM', qp .. 'waiting', id)
  redis.call('HINCRBY', qp .. 'stats', 'failed', 1)
  countMinute(qp .. 'metrics:', fx.now, 'failed', 1)
  if fx.failedTtl > 0 then
    redis.call('ZADD', qp .. 'failed', fx.nowText, id)
  else
    fx.dropped[#fx.dropped + 1] = nodeKey
  end
  if redis.call('EXISTS', fx.waitingKey) == 1 and redis.call('ZSCORE', fx.waitingKey, id) then
    publishFinished(fx.waitingKey, fx.finishedKey, fx.now, id, redis.call('HGETALL', nodeKey))
  end
  return error
end

-- The end of a flow whose last open node settled: its state (CANCELLED when
-- cancelled, SUCCESSFUL when every node succeeded, else FAILED), kept
-- flowTtl ms.
local function finishFlow(fx, flowHash)
  local f = redis.call('HMGET', flowHash, 'cancelled', 'failed')
  local state = 'SUCCESSFUL'
  if f[1] then state = 'CANCELLED' elseif tonumber(f[2] or '0') > 0 then state = 'FAILED' end
  redis.call('HSET', flowHash, 'state', state, 'finishedAt', fx.nowText)
  if fx.flowTtl > 0 then
    redis.call('PEXPIRE', flowHash, string.format('%d', fx.flowTtl))
  else
    redis.call('DEL', flowHash)
  end
end

-- Records the first outcome of flow nodes and applies it along their edges:
-- `work` holds { id, letter (S, F, Q or C), value (result or error JSON,
-- or '') } per node whose run just settled; nodes it fails are appended and
-- settled in turn. A node's edges are applied once: its `then` field goes
-- with its first outcome (a requeued node runs again alone). A run that is
-- no flow node costs one HMGET. Cost per node: O(its dependents), each an
-- HMGET and an HINCRBY; nothing scans a flow.
local function settleFlowNodes(fx, work)
  local i = 1
  while i <= #work do
    local id, letter, value = work[i][1], work[i][2], work[i][3]
    i = i + 1
    local nodeKey = fx.runPrefix .. id
    local f = redis.call('HMGET', nodeKey, 'flow', 'then')
    if f[1] and f[2] then
      redis.call('HDEL', nodeKey, 'then')
      local flowHash = fx.flowPrefix .. f[1]
      local entry = redis.call('HGET', flowHash, 'n:' .. id)
      if entry then
        local name, queue = string.match(entry, '^%u?|([^|]*)|([^|]*)|')
        redis.call('HSET', flowHash, 'n:' .. id, letter .. '|' .. name .. '|' .. queue .. '|' .. value)
        if letter ~= 'S' then redis.call('HINCRBY', flowHash, 'failed', 1) end
        if redis.call('HINCRBY', flowHash, 'open', -1) == 0 then finishFlow(fx, flowHash) end
      end
      for edge in string.gmatch(f[2], '[^,]+') do
        local dependent, policy = string.match(edge, '^(.*):(%a)$')
        local dependentKey = fx.runPrefix .. dependent
        local d = redis.call('HMGET', dependentKey, 'status', 'queue', 'score', 'runAfter')
        if d[1] == 'WAITING' then
          local effect = edgeEffect(policy, letter)
          if effect == 'fail' then
            work[#work + 1] = { dependent, 'F', failFlowNode(fx, dependent, dependentKey, d[2], id, letter) }
          elseif effect == 'ready' or redis.call('HINCRBY', dependentKey, 'pending', -1) <= 0 then
            readyFlowNode(fx, dependent, dependentKey, d)
          end
        end
      end
    end
  end
end

-- The flow context of a script (see above), from its keys and TTLs.
local function flowContext(now, runPrefix, flowPrefix, queuePrefix, waitingKey, finishedKey, failedTtl, flowTtl)
  return { now = now, nowText = string.format('%d', now), runPrefix = runPrefix, flowPrefix = flowPrefix,
    queuePrefix = queuePrefix, waitingKey = waitingKey, finishedKey = finishedKey, failedTtl = failedTtl,
    flowTtl = flowTtl, dropped = {}, deferred = false }
end

-- After settleFlowNodes: deletes the nodes settled only to be published (a
-- failed TTL of 0), and wakes the broker for nodes readied with a due time.
local function endFlowSettle(fx, brokerWakeKey)
  inChunks('DEL', false, fx.dropped)
  if fx.deferred then redis.call('ZADD', brokerWakeKey, '0', 'w') end
end
