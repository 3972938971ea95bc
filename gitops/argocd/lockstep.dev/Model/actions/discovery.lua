-- Actions on a lockstep.dev Model (docs/argocd.md, docs/rollouts.md "Manual rollback of a model"):
--   rollback   rollback.lockstep.dev/<status.revision>   prod goes back to the release it ran
--              before the current one, on its pinned runtime pair, without any gate
-- The chart's model-rollback ValidatingAdmissionPolicy admits the annotation only from a user
-- with RBAC verb "rollback" on the Model, as their own name, at the Model's current revision.
local actions = {}
local status = obj.status or {}
local current = nil
if status.prod ~= nil then current = status.prod.release end

-- Enabled when prod runs a release, no canary holds the slot, and the record names an earlier
-- release prod ran (the operator picks the newest one that still exists).
local earlier = false
if current ~= nil and status.history ~= nil then
  for _, e in ipairs(status.history) do
    if (e.action == "Promoted" or e.action == "Rollback") and e.release ~= nil and e.release ~= current then
      earlier = true
    end
  end
end
local canary = status.canary ~= nil and status.canary.release ~= nil

actions["rollback"] = {
  ["disabled"] = current == nil or canary or not earlier,
  ["iconClass"] = "fa fa-fw fa-undo"
}
return actions
