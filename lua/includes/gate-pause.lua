-- The pause gate (includes/gates; docs/storage.md, "Pause and resume"). A
-- paused queue (its flag exists) gives nothing, and its wake marker is
-- removed rather than kept (claim.lua removes the marker of a queue left no
-- room), so that idle consumers stay blocked until resume.lua sets it again
-- instead of waking to claim nothing. Its leased runs are not touched: they
-- run and are acknowledged as usual. It is the first gate asked, and a paused
-- queue asks no other: nothing of its cap, rate log or groups is read or
-- written.
local pauseGate = {
  flag = 'paused',
  room = function(_, _, _, paused)
    if paused then return 0, true end
    return nil
  end,
}
