-- The smallest of `names` greater than `after` ('' before the first), or
-- nil: per-name phases of a chunked walk (a purge's limit groups and TTL
-- classes, a requeue of every failed run's TTL classes) walk their names in
-- this order, so one added or removed between chunks neither stops nor repeats
-- the walk.
local function nextName(names, after)
  local best
  for j = 1, #names do
    local n = names[j]
    if n > after and (not best or n < best) then best = n end
  end
  return best
end
