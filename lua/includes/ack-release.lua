--- @include "includes/chunks"

-- The end of an acknowledgement's leases, and the removal of what it does not
-- keep (acknowledge.lua), each a command or a chunk per call: the leases of
-- the applied outcomes (`releasedIds`) leave the leases hash and the start
-- marks (`marks`: id, value pairs) are written; the runs `finished` with
-- nothing kept go whole, and the fresh records of runs settled elsewhere
-- (ack.freshIds: into a done record or their run hash) go; the done records
-- (`dones`: id, record pairs) are written; run hashes settled only to be
-- published (ack.published) go.
local function releaseAndRemove(ack, leasesHash, freshHash, releasedIds, marks, finished, dones)
  inChunks('HDEL', leasesHash, releasedIds)
  inChunks('HSET', leasesHash, marks)
  -- A finished run is deleted whole: its fresh record or its run hash, for a
  -- run has one or the other, never both (see includes/fresh). When each of
  -- them still had its fresh record, the rule for a first attempt, there is no
  -- run hash to delete, and no run key is built.
  local _, freshFinished = inChunks('HDEL', freshHash, finished)
  if freshFinished < #finished then
    local runKeys = {}
    for j = 1, #finished do runKeys[j] = ack.runPrefix .. finished[j] end
    inChunks('DEL', false, runKeys)
  end
  inChunks('HDEL', freshHash, ack.freshIds)
  inChunks('HSET', ack.doneKey, dones)
  inChunks('DEL', false, ack.published)
end
