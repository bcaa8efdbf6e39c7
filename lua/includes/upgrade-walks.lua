-- The walks of an upgrade in chunks (upgrade.lua), in order, each with the
-- layout version it completes. A walk is stepped with `budget` entries at
-- most and answers the entries it looked at and whether it ended; where it
-- is between calls lives in `w`: `cursor` (of its SCAN, HSCAN or SSCAN;
-- 'end' once that ended), `pending` (keys the SCAN found, not yet taken, one
-- a line), `key` (the key being converted) and `left` (entries of it still to
-- rotate).

-- 1 → 2. A lease value gains the started flag (`token|claimedAt|attempt|
-- recoveries|started|worker`): started when the run hash's `startedToken` is
-- the lease's token (a suspect recorded its start), else held. A value of
-- layout 2 does not match the layout-1 form, so a lease met twice is
-- rewritten once.
local function upgradeLeases(w, budget, leasesKey, runPrefix)
  local page = redis.call('HSCAN', leasesKey, w.cursor, 'COUNT', budget)
  local fields = page[2]
  for j = 1, #fields, 2 do
    local id, value = fields[j], fields[j + 1]
    local token, rest = string.match(value, '^([^|]*)|([^|]*|[^|]*|[^|]*|".*)$')
    if token then
      local started = redis.call('HGET', runPrefix .. id, 'startedToken') == token and '1' or '0'
      local claimedAt, attempt, recoveries, worker = string.match(rest, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
      redis.call('HSET', leasesKey, id,
        token .. '|' .. claimedAt .. '|' .. attempt .. '|' .. recoveries .. '|' .. started .. '|' .. worker)
    end
  end
  w.cursor = page[1]
  return #fields / 2, page[1] == '0'
end

-- 1 → 2. Direct delivery is gone: the idle registrations of the registered
-- queues go (inboxes and claim records expire on their own within a minute).
local function dropIdleRegistrations(w, budget, queuesKey, queuePrefix)
  local page = redis.call('SSCAN', queuesKey, w.cursor, 'COUNT', budget)
  for _, queue in ipairs(page[2]) do redis.call('DEL', queuePrefix .. queue .. ':idle') end
  w.cursor = page[1]
  return #page[2], page[1] == '0'
end

-- One step of a walk over the successful index of every queue, registered
-- or not (a queue only ever named by a producer may have finished runs),
-- whose Redis type is `type`: found a SCAN page at a time, then each
-- converted by `convert(w, budget)` (which empties `w.key` once done).
local function walkSuccessfulIndexes(w, budget, queuePrefix, type, convert)
  if w.key ~= '' then return convert(w, budget), false end
  if w.pending ~= '' then
    w.key, w.pending = string.match(w.pending, '^([^\n]*)\n?(.*)$')
    if type == 'list' then w.left = redis.call('LLEN', w.key) end
    return 1, false
  end
  if w.cursor == 'end' then return 0, true end
  local page = redis.call('SCAN', w.cursor, 'MATCH', queuePrefix .. '*:successful', 'COUNT', budget, 'TYPE', type)
  w.cursor = page[1] == '0' and 'end' or page[1]
  w.pending = table.concat(page[2], '\n')
  -- Looking at a key costs less than moving an entry.
  return math.ceil(budget / 4), false
end

-- 2 → 3. A queue's successful ZSET becomes a LIST of `finishedAt|id`
-- entries in score order: moved a page at a time into a list beside it,
-- which takes its name once the set is empty.
local function zsetToList(w, budget)
  local list = w.key .. ':upgrading'
  local scored = redis.call('ZRANGE', w.key, 0, budget - 1, 'WITHSCORES')
  local entries = {}
  for j = 1, #scored, 2 do
    entries[#entries + 1] = string.format('%d', tonumber(scored[j + 1])) .. '|' .. scored[j]
  end
  if #entries > 0 then
    redis.call('RPUSH', list, unpack(entries))
    redis.call('ZREMRANGEBYRANK', w.key, 0, #entries - 1)
  end
  if #entries < budget then
    if redis.call('EXISTS', list) == 1 then redis.call('RENAME', list, w.key) end
    w.key = ''
  end
  return #entries
end

-- 3 → 4. A successful LIST entry becomes the run's id alone: the list is
-- rotated through itself once (its `left` entries counted when it was
-- taken), a page at a time, its `finishedAt|` prefixes cut, its order kept.
local function cutFinishTimes(w, budget)
  local n = math.min(tonumber(w.left) or 0, budget)
  local entries = n > 0 and redis.call('LPOP', w.key, n) or false
  if entries then
    for j = 1, #entries do entries[j] = string.gsub(entries[j], '^%d+|', '', 1) end
    redis.call('RPUSH', w.key, unpack(entries))
    w.left = tonumber(w.left) - #entries
  else
    w.left = 0
  end
  if w.left <= 0 then w.key = '' end
  return math.max(n, 1)
end
