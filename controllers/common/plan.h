// ExecutionPlan: what one reconcile decided to write, as a value, so every
// controller's shell executes a plan the same way (controllers/common/execute.h)
// and every planner is tested without a server: owned objects to apply, owned
// objects to prune, status of other objects this controller owns fields of,
// Events, and the reconciled object's own status, which is written last.
// Pure. Thread-safety: values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "operator/kube/object.h"
#include "operator/kube/resource.h"

namespace lockstep::controllers {

// One server-side apply.
struct PlannedApply {
  kube::Resource resource;
  kube::Object object;          // apiVersion, kind, metadata.name/namespace + the owned fields
  std::string fieldManager;     // "" = the client's default
  bool ignoreNotFound = false;  // the target may be gone meanwhile: not an error
  std::string what;             // for errors and logs: "marking ModelRelease v7"
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

}  // namespace lockstep::controllers
