--[[
  watch: register runs somebody waits on, and tell where each one is now.

  A waiter calls it before it waits (see includes/finished): the scripts that
  settle or remove a registered run publish it to the `finished` stream in
  the same call. Registering and reading the state are one step, so there is
  no window: a run pending here is published when it settles, and the reply's
  `lastId` is the stream position from which the waiter reads (the entry of
  any run pending here comes after it).

  KEYS      waiting, finished, fresh, runPrefix (the ids come in ARGV), done
            (lua/keys.mjs)

  ARGV[1]   expiryMs      how long the registrations last (renewed by calling
                          again; a registration only ever gets later)
  ARGV[2..] run ids

  Returns   { lastId, state_1, ... }: lastId the id of the stream's last entry
            ('0-0' when it has none); per id, the run's fields (HGETALL pairs)
            when it is settled (SUCCESSFUL, FAILED, QUARANTINED or CANCELLED: nothing
            more will be published, and it is not registered), 1 when no run
            has the id (it is registered all the same: a waitable enqueue
            registers before it stores), 0 when it is pending.

  Registrations that expired are dropped first, so the key disappears once
  nobody waits (acknowledge then pays one EXISTS per call).

  Complexity: O(n log N) for n ids, plus the fields of the settled ones.
]]
--- @include "includes/now"
--- @include "includes/fresh"
--- @include "includes/done"
--- @keys

local now = nowMs()
redis.call('ZREMRANGEBYSCORE', waitingKey, '-inf', '(' .. string.format('%d', now))
local last = redis.call('XREVRANGE', finishedKey, '+', '-', 'COUNT', 1)[1]
local reply = { last and last[1] or '0-0' }

local expiry = string.format('%d', now + tonumber(ARGV[1]))
local registrations = {}
for a = 2, #ARGV do
  local id = ARGV[a]
  local run = settledRun(freshKey, doneKey, runPrefix .. id, id)
  if type(run) == 'table' then
    reply[a] = run
  else
    reply[a] = run and 0 or 1
    registrations[#registrations + 1] = expiry
    registrations[#registrations + 1] = id
  end
end
-- The caller sends at most a few hundred ids a call, within what `unpack` takes.
if #registrations > 0 then redis.call('ZADD', waitingKey, 'GT', unpack(registrations)) end
return reply
