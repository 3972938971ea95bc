-- Skips the remaining canary steps and their analysis of a lockstep.dev ModelRelease and starts
-- promotion: annotation lockstep.dev/promote-full, RBAC verb "promote" (docs/rollouts.md).
-- The annotation's value must be the name of the user who writes it: the webhook refuses any
-- other value. Argo CD runs actions with its own credentials, not the clicking user's, so this
-- is argocd-server's ServiceAccount in a default install (namespace argocd). Change it when
-- Argo CD runs elsewhere, or impersonates a destination ServiceAccount (docs/argocd.md).
local actor = "system:serviceaccount:argocd:argocd-server"

local status = obj.status or {}
if status.phase ~= "Canary" then
  error("ModelRelease " .. obj.metadata.name .. " is not in a canary (phase " .. tostring(status.phase) .. ")", 0)
end
if obj.metadata.annotations == nil then obj.metadata.annotations = {} end
obj.metadata.annotations["lockstep.dev/promote-full"] = actor
return obj
