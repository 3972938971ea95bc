-- Rolls a lockstep.dev Model's prod back to the release it ran before the current one:
-- annotation rollback.lockstep.dev/<status.revision>, RBAC verb "rollback" on models
-- (docs/rollouts.md "Manual rollback of a model"). No target is named: the operator takes the
-- newest release of the Model's history, other than prod's, that still exists (the CLI's
-- default), on the runtime pair it was validated on, and refuses in that release's
-- status.rollback when it cannot (a pruned runtime revision, a closed change window).
-- The annotation's value must be the name of the user who writes it: the chart's policy refuses
-- any other value. Argo CD runs actions with its own credentials, not the clicking user's, so
-- this is argocd-server's ServiceAccount in a default install (namespace argocd). Change it when
-- Argo CD runs elsewhere, or impersonates a destination ServiceAccount (docs/argocd.md).
local actor = "system:serviceaccount:argocd:argocd-server"

local status = obj.status or {}
if status.prod == nil or status.prod.release == nil then
  error("Model " .. obj.metadata.name .. " runs no promoted release; nothing to roll back", 0)
end
if status.canary ~= nil and status.canary.release ~= nil then
  error("release " .. status.canary.release .. " is in canary on Model " .. obj.metadata.name ..
        "; abort it first", 0)
end
local earlier = false
if status.history ~= nil then
  for _, e in ipairs(status.history) do
    if (e.action == "Promoted" or e.action == "Rollback") and e.release ~= nil
        and e.release ~= status.prod.release then
      earlier = true
    end
  end
end
if not earlier then
  error("Model " .. obj.metadata.name .. " has no earlier promoted release to go back to", 0)
end
if obj.metadata.annotations == nil then obj.metadata.annotations = {} end
obj.metadata.annotations["rollback.lockstep.dev/" .. tostring(status.revision or 0)] = actor
return obj
