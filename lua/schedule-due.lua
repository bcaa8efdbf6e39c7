--[[
  schedule-due: the schedules whose next slot is due (or still to plan), for
  a process that runs schedules, and when the next one comes due.

  Due slots come first, oldest first, then schedules to plan (score 0): a
  batch of new schedules (thousands upserted at once) is planned a `limit` at
  a time, after the slots due, so it never holds a due slot back by more
  than one batch.

  KEYS      schedules, schedulePrefix (schedule keys are derived from it and
            the due ids) (lua/keys.mjs)

  ARGV[1]   limit         most schedules returned

  Returns   { now, nextDue, id_1, fields_1, id_2, fields_2, ... }: the Redis
            time, the due time of the earliest schedule not returned (or
            '' when none is planned), and per due schedule its id and its
            hash's fields (a flat HGETALL reply without the declarations).
  Complexity: O(log N + k·F) for k due schedules of F fields.
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local nowText = string.format('%d', now)
local limit = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', schedulesKey, '(0', nowText, 'LIMIT', 0, limit)
if #due < limit then
  local toPlan = redis.call('ZRANGEBYSCORE', schedulesKey, '0', '0', 'LIMIT', 0, limit - #due)
  for i = 1, #toPlan do due[#due + 1] = toPlan[i] end
end
local reply = { now, '' }
local after = redis.call('ZRANGEBYSCORE', schedulesKey, '(' .. nowText, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #after > 0 and after[2] ~= 'inf' then reply[2] = after[2] end
if #due == limit then reply[2] = nowText end
for i = 1, #due do
  local flat = redis.call('HGETALL', schedulePrefix .. due[i])
  local fields = {}
  for f = 1, #flat, 2 do
    local name = flat[f]
    if string.sub(name, 1, 5) ~= 'decl:' and string.sub(name, 1, 5) ~= 'spec:' then
      fields[#fields + 1] = name
      fields[#fields + 1] = flat[f + 1]
    end
  end
  reply[#reply + 1] = due[i]
  reply[#reply + 1] = fields
end
return reply
