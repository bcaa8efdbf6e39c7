-- A run of a limit group at enqueue (enqueue.lua; includes/limit-groups): a
-- run hash (its group beside the fields a fresh record holds), in the ready
-- ZSET (never the ready list) or the deferred set, which a claim reads its
-- group from (includes/claim-groups); its queue's `grouped` flag is set and
-- the queue registered (enqueue.lua, per queue). Called per run of a group
-- only: a plain run is a fresh record, written by the script's own loop.
-- Item i (id `id`, option set `o`, sequence base `seq`) of call `e`.
local function storeGroupedRun(e, i, id, o, seq)
  local q = o.q
  local score = string.format('%d', o.scoreBase + seq + i)
  local fields = { 'payload', e.itemPayloads[i], 'queue', ARGV[2 + q], 'score', score, 'enqueuedAt', e.nowText,
    'group', e.itemGroups[i] }
  if o.leaseTtlText then
    fields[#fields + 1] = 'leaseTtl'
    fields[#fields + 1] = o.leaseTtlText
  end
  if o.check then e.added[id] = true end
  if o.due > 0 then
    fields[#fields + 1] = 'runAfter'
    fields[#fields + 1] = o.dueText
    local d = e.deferredAdds[q] or {}
    e.deferredAdds[q] = d
    d[#d + 1] = o.dueText
    d[#d + 1] = id
    e.anyDeferred = true
  else
    local r = e.readyAdds[q] or {}
    e.readyAdds[q] = r
    r[#r + 1] = score
    r[#r + 1] = id
  end
  redis.call('HSET', e.runPrefix .. id, unpack(fields))
  e.grouped[q] = true
  e.enqueued[q] = (e.enqueued[q] or 0) + 1
end
