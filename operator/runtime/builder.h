// ControllerBuilder: wires one controller on a Manager, as controller-runtime's
// builder does, so a controller's setup states what it reconciles and what
// wakes it instead of hand-registering event handlers:
//
//   ControllerBuilder(manager, "runtimeenv")
//       .forKind(api::v1alpha1::kRuntimeEnvs)          // its own spec changes
//       .owns(kube::resources::kJobs)                  // via controller ownerReferences
//       .watches(kube::resources::kConfigMaps, mapFn)  // anything else, with a map
//       .complete(reconciler);
//
// Thread-safety: use from the wiring thread before Manager::run().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operator/runtime/controller.h"
#include "operator/runtime/manager.h"

namespace lockstep::runtime {

// Decides whether an update (old, new) enqueues; nullptr enqueues every update.
using UpdateFilter = std::function<bool(const kube::Object& oldObj, const kube::Object& newObj)>;
// Updates that change metadata.generation: spec changes, not status writes.
UpdateFilter generationChanged();

class ControllerBuilder {
 public:
  ControllerBuilder(Manager& manager, std::string name);

  ControllerBuilder& workers(int n);
  // The kind reconciled: each of its objects is a Request.
  ControllerBuilder& forKind(const kube::Resource& resource,
                             UpdateFilter filter = generationChanged());
  // A kind this controller creates: events map to the controlling owner of the
  // forKind kind (ownerReferences with controller: true).
  ControllerBuilder& owns(const kube::Resource& resource, UpdateFilter filter = nullptr);
  // The same through the informer of `informer` (a label or field selector).
  ControllerBuilder& owns(const kube::InformerOptions& informer, UpdateFilter filter = nullptr);
  // Any other kind, mapped to Requests by `map`.
  ControllerBuilder& watches(const kube::Resource& resource, MapFunc map,
                             UpdateFilter filter = nullptr);
  ControllerBuilder& watches(const kube::InformerOptions& informer, MapFunc map,
                             UpdateFilter filter = nullptr);
  // Registers the controller and its watches on the manager.
  Controller& complete(std::shared_ptr<Reconciler> reconciler);

 private:
  struct Watch {
    kube::InformerOptions informer;
    MapFunc map;
    UpdateFilter filter;
  };
  Manager& manager_;
  std::string name_;
  int workers_ = 1;
  kube::Resource forKind_;
  std::vector<Watch> watches_;
};

}  // namespace lockstep::runtime
