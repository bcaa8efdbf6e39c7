-- Which of the keys of the queue with key prefix `prefix` exist, in one
-- EXISTS, which counts a key as often as it is named: the ready set and list
-- once each, each rule's key (pause, cap, rate, grouped) three times. 0: an
-- idle queue (no ready runs, no rule), passed by (docs/storage.md, "Queues
-- without ready runs"); 1 or 2: ready runs and no rule, so no flag to read;
-- 3 or more: some rule, flags read.
local function presentKeys(prefix)
  local paused, cap, rate, grouped = prefix .. 'paused', prefix .. 'cap', prefix .. 'rate', prefix .. 'grouped'
  return redis.call('EXISTS', prefix .. 'ready', prefix .. 'ready-list', paused, paused, paused, cap, cap, cap, rate,
    rate, rate, grouped, grouped, grouped)
end
