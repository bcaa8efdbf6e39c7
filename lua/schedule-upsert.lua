--[[
  schedule-upsert: create or replace a schedule made at run time
  (`TaskScheduler.upsert`, source 'api').

  The same definition again (same digest) changes nothing: its next slot and
  history stand. A new definition replaces the old at once and leaves its next
  slot to plan (`next` ''), which the next process to read it computes from
  the new definition, after the last slot fired (so a slot already fired is
  never fired again). A schedule declared in code (source 'code') that is
  upserted under its id becomes the application's: its declarations are
  dropped, and code no longer changes or removes it.

  KEYS      schedule, schedules, brokerWake (the brokers' schedulers plan it at
            once) (lua/keys.mjs)

  ARGV[1]   id
  ARGV[2]   digest        of the definition (the client's hash of it)
  ARGV[3]   def           the definition (JSON, as the client encoded it)
  ARGV[4]   queue         the queue its runs go to

  Returns   'created', 'replaced' or 'unchanged'.
  Complexity: O(F) for the F fields of the schedule's hash.
]]
--- @keys
local id, digest = ARGV[1], ARGV[2]
local current = redis.call('HMGET', scheduleKey, 'digest', 'source', 'def')
if current[1] == digest and current[2] == 'api' then return 'unchanged' end

-- Keep the history (runs, last slot and run); drop code declarations.
local kept = redis.call('HMGET', scheduleKey, 'runs', 'skipped', 'lastSlot', 'lastRun', 'lastAt', 'lastBy')
local names = { 'runs', 'skipped', 'lastSlot', 'lastRun', 'lastAt', 'lastBy' }
redis.call('DEL', scheduleKey)
local fields = { 'def', ARGV[3], 'digest', digest, 'source', 'api', 'queue', ARGV[4], 'next', '' }
for i = 1, #names do
  if kept[i] then
    fields[#fields + 1] = names[i]
    fields[#fields + 1] = kept[i]
  end
end
redis.call('HSET', scheduleKey, unpack(fields))
redis.call('ZADD', schedulesKey, '0', id)
redis.call('ZADD', brokerWakeKey, '0', 'w')
return current[3] and 'replaced' or 'created'
