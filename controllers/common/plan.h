// ExecutionPlan: what one reconcile decided to write, as a value, so every
// controller's shell executes a plan the same way (controllers/common/execute.h)
// and every planner is tested without a server: owned objects to write (a
// server-side apply, or a create, an update guarded by the resourceVersion it
// was planned from, a merge patch), owned objects to prune, status of other
// objects this controller owns fields of, Events, and the reconciled object's
// own status, which is written last.
// Pure. Thread-safety: values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "operator/kube/object.h"
#include "operator/kube/resource.h"

namespace lockstep::controllers {

// How a planned write reaches the API server.
enum class WriteVerb {
  kApply,       // server-side apply (forced, under fieldManager)
  kCreate,      // POST; AlreadyExists means done (deterministic names make a retry harmless)
  kUpdate,      // PUT, guarded by resourceVersion: a Conflict means "plan again"
  kMergePatch,  // JSON merge patch of `object` onto ns/name
};

// One write. Every kind but kApply names its target by the object's metadata
// (kMergePatch: `ns`/`name`, the object being the patch).
struct PlannedApply {
  kube::Resource resource;
  kube::Object object;          // apiVersion, kind, metadata.name/namespace + the owned fields
  std::string fieldManager;     // "" = the client's default
  bool ignoreNotFound = false;  // the target may be gone meanwhile: not an error
  std::string what;             // for errors and logs: "marking ModelRelease v7"
  WriteVerb verb = WriteVerb::kApply;
  // Precondition: the resourceVersion the write was planned from ("" = none).
  // Set on the object's metadata, so the server refuses a plan made on a stale
  // copy with a Conflict (re-planned, never applied over the newer object).
  std::string resourceVersion;
  std::string ns, name;  // kMergePatch
  // Precondition: the uid the target must still have ("" = none), set as
  // metadata.uid in the body of an apply, update or merge patch: the server
  // refuses the write when the object was deleted and re-created meanwhile
  // (by someone else), instead of writing over the newcomer.
  std::string uid;
  // kUpdate, kMergePatch: write the object's /status subresource (an entry of
  // `apply` that must precede the others, e.g. a guarded record written before
  // the objects it describes change).
  bool statusSubresource = false;
  // kCreate: AlreadyExists is a Conflict ("plan again from what stands
  // there") instead of done: for a name someone else may have taken between
  // the read and the create.
  bool alreadyExistsIsConflict = false;
  // When the write fails: a Warning Event with this reason on `failureEventOn`
  // (message: what + ": " + the error, or the error alone), unless the error
  // is transient and failureEventWhenTransient is false.
  kube::ObjectPtr failureEventOn;
  std::string failureEventReason;
  bool failureEventWhenTransient = true;
};

// An owned object no longer desired, deleted only if its uid still matches.
struct PlannedDelete {
  kube::Resource resource;
  std::string ns;
  std::string name;
  std::string uid;
};

struct PlannedEvent {
  kube::ObjectPtr involved;
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

struct ExecutionPlan {
  std::vector<PlannedApply> apply;        // owned objects, in order
  std::vector<PlannedApply> applyStatus;  // other objects' status fields this controller owns
  std::vector<PlannedDelete> prune;
  std::vector<PlannedEvent> events;    // best effort: never fail a reconcile
  std::optional<PlannedApply> status;  // the reconciled object's status: last
};

// The body of a server-side apply of `status` on /status for the named object.
kube::Object statusApply(const kube::Resource& resource, const std::string& ns,
                         const std::string& name, nlohmann::json status);

// Planned writes, by verb.
PlannedApply plannedApply(const kube::Resource& resource, kube::Object object, std::string what);
PlannedApply plannedCreate(const kube::Resource& resource, kube::Object object, std::string what);
// Guarded by the object's own metadata.resourceVersion (the copy it was planned from).
PlannedApply plannedUpdate(const kube::Resource& resource, kube::Object object, std::string what);
PlannedApply plannedMergePatch(const kube::Resource& resource, const std::string& ns,
                               const std::string& name, nlohmann::json patch, std::string what);

}  // namespace lockstep::controllers
