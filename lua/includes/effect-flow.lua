--- @include "includes/flow-settle"

-- Flows (includes/effects; includes/flow-settle). An applied outcome that
-- settles a flow node (a success, a failure, a quarantine: not a retry)
-- records it in its flow and applies it along the node's edges. Only a
-- queue whose `flowed` flag is set holds flow nodes, and a node never has a
-- fresh record (ack.mayBeGrouped[q]): a batch of first attempts that
-- succeeded reads nothing, other batches one EXISTS per queue, and only a
-- flowed queue's settled runs are looked at, one HMGET each. Called once,
-- after the outcomes are applied and before the records of runs not kept
-- are deleted. `keysOf(q)`: queue q's keys by name.
local LETTER = { S = 'S', F = 'F', f = 'F', Q = 'Q', q = 'Q' }
local flowEffect = {
  released = function(ack, queueCount, keysOf, flowPrefix, queuePrefix)
    local flowed, any = {}, false
    for q = 1, queueCount do
      if ack.mayBeGrouped[q] and redis.call('EXISTS', keysOf(q).keyPrefix .. 'flowed') == 1 then
        flowed[q], any = true, true
      end
    end
    if not any then return end
    local items = ack.items
    local work = {}
    for i = 1, items.n do
      local letter = LETTER[items.codes[i]]
      if letter and flowed[items.queues[i]] and ack.appliedAt[items.ids[i]] == i then
        work[#work + 1] = { items.ids[i], letter, items.values[i] }
      end
    end
    if #work == 0 then return end
    local fx = flowContext(ack.now, ack.runPrefix, flowPrefix, queuePrefix, ack.waitingKey, ack.finishedKey,
      ack.failedTtl, math.max(ack.successfulTtl, ack.failedTtl))
    settleFlowNodes(fx, work)
    endFlowSettle(fx, ack.brokerWakeKey)
  end,
}
