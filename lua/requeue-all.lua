--[[
  requeue-all: one bounded chunk of the requeue of every run of a queue's
  failed, quarantined or cancelled segment. The client calls it until it
  answers done, passing each answer's position to the next call.

  What it requeues is what the segment held when its first call ran. A run
  enters a finished index only with the Redis clock of the script that
  finished it as its score, so an entry scored before the first call's clock
  (startMs) was there when it ran, and one that entered since scores startMs
  or more. The first call requeues the entries scored startMs or more it
  finds (those that finished in its own millisecond); every call walks
  each index from its head below startMs, so a run that finishes later is
  never reached. Each run is requeued by includes/requeue-run's rule, as
  requeue.lua requeues one; a run requeued, trimmed or purged meanwhile has
  left the index and is not met. An entry whose run is not one of this queue
  in a requeue-able state (an id in no record) is dropped, as a trim would:
  it names no run of the segment. Each call is atomic, so every invariant of
  docs/storage.md holds between calls; why the chunks are exact: its
  "Requeueing a segment in chunks".

  Phases: 1 the segment's index; 2 (failed only) each TTL class's failed
  index, in name order (includes/next-name).

  KEYS      runPrefix, ready, failed (the default failed index: classes derive
            from it), quarantined, cancelled, wake, stats (`requeued`), leases,
            fresh, done, resultClasses, callRecord (lua/keys.mjs)

  ARGV[1]   callId        unique to this call; the same for its copies
  ARGV[2]   queue         the queue's name
  ARGV[3]   segment       'failed', 'quarantined' or 'cancelled'
  ARGV[4]   budget        most index entries this call looks at (the first
                          call's runs of its own millisecond besides)
  ARGV[5]   startMs       '' in the first call, then the answer's
  ARGV[6..7] phase, name: where the previous answer stopped ('1', '')

  Returns   { requeued, startMs, phase, name, done (0/1) }. A replay of a
            call that ran answers as its first copy did and changes nothing.

  Complexity: O(budget × log N) (each run a handful of O(log N) commands);
  the first call also O(C log N) for C TTL classes and the runs of its own
  millisecond; a class phase reads the queue's classes once per call.
]]
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/now"
--- @include "includes/result-classes"
--- @include "includes/requeue-run"
--- @include "includes/next-name"
--- @keys

local first = recalledReply(callRecordKey, ARGV[1])
if first then
  local requeued, start, phase, done, name = string.match(first, '^([^,]*),([^,]*),([^,]*),([^,]*),(.*)$')
  return { tonumber(requeued), start, tonumber(phase), name, tonumber(done) }
end

local queueKeys = {
  ready = readyKey, failed = failedKey, quarantined = quarantinedKey, cancelled = cancelledKey,
  classes = resultClassesKey, leases = leasesKey, fresh = freshKey, done = doneKey,
}
local queue, segment, budget = ARGV[2], ARGV[3], tonumber(ARGV[4])
local firstCall = ARGV[5] == ''
local startMs = firstCall and nowMs() or tonumber(ARGV[5])
local phase, name = tonumber(ARGV[6]), ARGV[7]
local PHASES = segment == 'failed' and 2 or 1
local index = ({ failed = failedKey, quarantined = quarantinedKey, cancelled = cancelledKey })[segment]
local looked, requeued = 0, 0

-- Requeues the runs `ids` of index `key`, dropping the entries no run of the
-- segment holds.
local function requeueEntries(key, ids)
  for j = 1, #ids do
    local id = ids[j]
    if requeueRun(queueKeys, runPrefix .. id, id, queue, key) then
      requeued = requeued + 1
    else
      redis.call('ZREM', key, id)
    end
  end
end

-- The failed index keys of the queue's TTL classes' names (`failed:<ttl>`).
local function failedClasses()
  local names = {}
  for _, member in ipairs(redis.call('SMEMBERS', resultClassesKey)) do
    if string.sub(member, 1, 7) == 'failed:' then names[#names + 1] = member end
  end
  return names
end

-- One chunk of index `key`'s walk from its head: requeued entries leave it
-- and dropped ones too, so its head is always what is left to do. Returns
-- whether the walk of the index ended.
local function walkStep(key)
  local want = math.max(budget - looked, 1)
  local ids = redis.call('ZRANGEBYSCORE', key, '-inf', '(' .. startMs, 'LIMIT', 0, want)
  looked = looked + math.max(#ids, 1)
  requeueEntries(key, ids)
  return #ids < want
end

if firstCall then
  -- Scored startMs or more yet there: finished before this call, in its millisecond.
  local indexes = { index }
  if segment == 'failed' then
    for _, member in ipairs(failedClasses()) do indexes[#indexes + 1] = (classKey(member, failedKey, failedKey)) end
  end
  for _, key in ipairs(indexes) do
    requeueEntries(key, redis.call('ZRANGEBYSCORE', key, startMs, '+inf'))
  end
end

-- One chunk of phase 2: `name` is the class being walked, with a '>' before
-- it once its walk ended (the next class is due).
local function classStep()
  if name == '' or string.sub(name, 1, 1) == '>' then
    local n = nextName(failedClasses(), string.sub(name, 2))
    if not n then return true end
    name = n
  end
  if walkStep((classKey(name, failedKey, failedKey))) then name = '>' .. name end
  return false
end

while phase <= PHASES and looked < budget do
  local ended
  if phase == 1 then ended = walkStep(index) else ended = classStep() end
  if ended then phase, name = phase + 1, '' end
end

if requeued > 0 then
  redis.call('ZADD', wakeKey, 0, 'w')
  redis.call('HINCRBY', statsKey, 'requeued', requeued)
end
local done = phase > PHASES and 1 or 0
local start = string.format('%d', startMs)
recordReply(callRecordKey, ARGV[1], table.concat({ requeued, start, phase, done, name }, ','))
return { requeued, start, phase, name, done }
