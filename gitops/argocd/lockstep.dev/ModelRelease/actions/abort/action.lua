-- Aborts a lockstep.dev ModelRelease: a running gate Job is stopped and the release ends Failed;
-- a canary rolls back to the last known-good release. Annotation lockstep.dev/abort, RBAC verb
-- "abort" (docs/modelrelease.md). A release that already ended cannot be aborted.
-- The annotation's value must be the name of the user who writes it: the webhook refuses any
-- other value. Argo CD runs actions with its own credentials, not the clicking user's, so this
-- is argocd-server's ServiceAccount in a default install (namespace argocd). Change it when
-- Argo CD runs elsewhere, or impersonates a destination ServiceAccount (docs/argocd.md).
local actor = "system:serviceaccount:argocd:argocd-server"

local phase = "Pending"
if obj.status ~= nil and obj.status.phase ~= nil then phase = obj.status.phase end
if phase == "Validated" or phase == "Promoted" or phase == "Superseded" or phase == "Failed"
    or phase == "RolledBack" then
  error("ModelRelease " .. obj.metadata.name .. " already ended (phase " .. phase .. "); nothing to abort", 0)
end
if obj.metadata.annotations == nil then obj.metadata.annotations = {} end
obj.metadata.annotations["lockstep.dev/abort"] = actor
return obj
