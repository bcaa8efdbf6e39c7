-- Direct delivery to idle consumers. A consumer whose claim came back short
-- (its queues ran out of ready runs) is registered in each of its queues'
-- `idle` sets until its next claim, by registration time, as
--
--   leaseTtl|queue,queue,...|worker
--
-- (its default lease length in ms, its queues, its id JSON-encoded). An
-- enqueue that finds a queue empty and a consumer registered on it leases the
-- new run to that consumer at once and puts it in the consumer's inbox, a ZSET
-- its blocked wait includes, as
--
--   token|claimedAt|deadline|queue|id|record
--
-- (record: the run's fresh record, see includes/fresh). The idle consumer so
-- starts the run one round trip sooner than by waking up and claiming it.
-- Each registration takes one delivery (it is popped); the consumer's next
-- claim takes whatever its inbox holds and withdraws its registrations.

-- A registration older than this is dropped unused: its consumer is gone
-- (a live idle one renews it at least every 10 s, when its wait times out).
local IDLE_REGISTRATION_MS = 30000
-- An inbox outlives its consumer by this long, then expires: a delivery made
-- to a consumer that died meanwhile is recovered by the reaper from its lease.
local INBOX_TTL_MS = '60000'

-- Pops the oldest live registration of `idleKey`, or returns nil.
local function takeIdle(idleKey, now)
  while true do
    local popped = redis.call('ZPOPMIN', idleKey)
    if #popped == 0 then return nil end
    if tonumber(popped[2]) >= now - IDLE_REGISTRATION_MS then return popped[1] end
  end
end

-- Leases fresh run `id` (fresh record `record`, of queue `queue`) to the
-- consumer of registration `member` and puts it in that consumer's inbox.
-- Withdraws the registration from the consumer's other queues (it is busy
-- now). Returns whether the running set was empty (the broker's cue).
-- (`nowText` is `now` written with '%d', as are the other numbers here: see
-- the note on numbers in enqueue.lua.)
local function deliver(member, k)
  local ttl, queues, worker = string.match(member, '^(%d+)|([^|]*)|(.*)$')
  for name in string.gmatch(queues, '[^,]+') do
    if name ~= k.queue then redis.call('ZREM', k.queuePrefix .. name .. ':idle', member) end
  end
  local _, leaseTtl = freshHead(k.record)
  local deadline = string.format('%d', k.now + (leaseTtl or tonumber(ttl)))
  local token = string.format('%d', redis.call('INCR', k.seq))
  local wasIdle = redis.call('EXISTS', k.running) == 0
  redis.call('HSET', k.leases, k.id, token .. '|' .. k.nowText .. '|1|0|' .. worker)
  redis.call('ZADD', k.running, deadline, k.id)
  local inbox = k.inboxPrefix .. worker
  redis.call('ZADD', inbox, '0', token .. '|' .. k.nowText .. '|' .. deadline .. '|' .. k.queue .. '|' .. k.id .. '|' .. k.record)
  redis.call('PEXPIRE', inbox, INBOX_TTL_MS)
  return wasIdle
end
