-- Ends the pause of the current canary step of a lockstep.dev ModelRelease (its analysis must
-- still pass): annotation promote.lockstep.dev/<step index>, RBAC verb "promote" (docs/rollouts.md).
-- The key names the step, so a leftover annotation never ends a later pause.
-- The annotation's value must be the name of the user who writes it: the webhook refuses any
-- other value. Argo CD runs actions with its own credentials, not the clicking user's, so this
-- is argocd-server's ServiceAccount in a default install (namespace argocd). Change it when
-- Argo CD runs elsewhere, or impersonates a destination ServiceAccount (docs/argocd.md).
local actor = "system:serviceaccount:argocd:argocd-server"

local status = obj.status or {}
if status.phase ~= "Canary" then
  error("ModelRelease " .. obj.metadata.name .. " is not in a canary (phase " .. tostring(status.phase) .. ")", 0)
end
local step = nil
if status.canary ~= nil then step = status.canary.step end
if step == nil then step = status.canaryStep end
if step == nil then
  error("ModelRelease " .. obj.metadata.name .. " has no current canary step in its status yet", 0)
end
if obj.metadata.annotations == nil then obj.metadata.annotations = {} end
obj.metadata.annotations["promote.lockstep.dev/" .. step] = actor
return obj
