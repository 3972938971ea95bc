-- Actions on a lockstep.dev ModelRelease. Each one writes an annotation that the release's
-- admission webhook checks with a SubjectAccessReview (docs/modelrelease.md, docs/rollouts.md):
--   approve        approve.lockstep.dev/<stage>   the stage in WaitingForApproval
--   promote        promote.lockstep.dev/<step>    ends the current canary step's pause
--   promote-full   lockstep.dev/promote-full      skips the remaining canary steps
--   abort          lockstep.dev/abort             stops the release (a canary rolls back)
local actions = {}
local status = obj.status or {}
local phase = status.phase or "Pending"
local annotations = obj.metadata.annotations or {}

local terminal = phase == "Validated" or phase == "Promoted" or phase == "Superseded"
    or phase == "Failed" or phase == "RolledBack"

local waiting = false
if status.stages ~= nil then
  for _, s in ipairs(status.stages) do
    if s.phase == "WaitingForApproval" then waiting = true end
  end
end

-- Promotion only makes sense while the canary is stepping forward (not while it rolls back
-- or is already being promoted).
local canaryRunning = phase == "Canary"
    and (status.canary == nil or status.canary.phase == nil or status.canary.phase == "Progressing")

actions["approve"] = {["disabled"] = not waiting, ["iconClass"] = "fa fa-fw fa-check"}
actions["promote"] = {["disabled"] = not canaryRunning, ["iconClass"] = "fa fa-fw fa-forward"}
actions["promote-full"] = {["disabled"] = not canaryRunning, ["iconClass"] = "fa fa-fw fa-fast-forward"}
actions["abort"] = {
  ["disabled"] = terminal or annotations["lockstep.dev/abort"] ~= nil,
  ["iconClass"] = "fa fa-fw fa-stop-circle"
}
return actions
