--- @include "includes/limit-groups"

-- Limit-group release (includes/effects; includes/limit-groups, freeGroup,
-- docs/storage.md, "Limit groups"). A lease of a run of a limit group that
-- ends (any applied outcome) makes the group due at once when it holds parked
-- runs, and sets the queue's wake marker. Only a queue whose `grouped` flag
-- is set holds such leases (a claim sets it before it leases a run of a
-- group, and a purge drops it only with no lease left), and only runs without
-- a fresh record may be grouped (ack.mayBeGrouped[q]: a run released had no
-- fresh record, or its record was not read): the flag is read once per call
-- and such queue, a batch of first attempts that succeeded reads nothing
-- more, and only a grouped queue's released runs have their group read, one
-- HGET each, and one EXISTS per distinct group. Read before the run hashes of
-- finished runs are deleted.
local groupsEffect = {
  released = function(ack, q, k)
    if not ack.mayBeGrouped[q] or redis.call('EXISTS', k.keyPrefix .. 'grouped') ~= 1 then return end
    local r = ack.released[q]
    local groupPrefix, groupsKey = k.keyPrefix .. 'group:', k.keyPrefix .. 'groups'
    local met, freed = {}, false
    for j = 1, #r do
      local group = redis.call('HGET', ack.runPrefix .. r[j], 'group')
      if group and not met[group] then
        met[group] = true
        freed = freeGroup(groupPrefix, groupsKey, group) or freed
      end
    end
    if freed then redis.call('ZADD', k.wake, 0, 'w') end
  end,
}
