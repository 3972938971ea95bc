#include "operator/runtime/builder.h"

namespace lockstep::runtime {

UpdateFilter generationChanged() {
  return [](const kube::Object& a, const kube::Object& b) {
    return kube::generation(a) != kube::generation(b);
  };
}

namespace {

// The informer Manager::informer(resource) shares: every object of the kind.
kube::InformerOptions informerFor(const kube::Resource& resource) {
  kube::InformerOptions o;
  o.resource = resource;
  return o;
}

}  // namespace

ControllerBuilder::ControllerBuilder(Manager& manager, std::string name)
    : manager_(manager), name_(std::move(name)) {}

ControllerBuilder& ControllerBuilder::workers(int n) {
  workers_ = n;
  return *this;
}

ControllerBuilder& ControllerBuilder::forKind(const kube::Resource& resource, UpdateFilter filter) {
  forKind_ = resource;
  watches_.push_back({informerFor(resource), requestForObject(), std::move(filter)});
  return *this;
}

ControllerBuilder& ControllerBuilder::owns(const kube::Resource& resource, UpdateFilter filter) {
  return owns(informerFor(resource), std::move(filter));
}

ControllerBuilder& ControllerBuilder::owns(const kube::InformerOptions& informer,
                                           UpdateFilter filter) {
  // The owner's group is known only once forKind was called; resolve at complete().
  watches_.push_back({informer, nullptr, std::move(filter)});
  return *this;
}

ControllerBuilder& ControllerBuilder::watches(const kube::Resource& resource, MapFunc map,
                                              UpdateFilter filter) {
  return watches(informerFor(resource), std::move(map), std::move(filter));
}

ControllerBuilder& ControllerBuilder::watches(const kube::InformerOptions& informer, MapFunc map,
                                              UpdateFilter filter) {
  watches_.push_back({informer, std::move(map), std::move(filter)});
  return *this;
}

Controller& ControllerBuilder::complete(std::shared_ptr<Reconciler> reconciler) {
  ControllerOptions options;
  options.name = name_;
  options.workers = workers_;
  Controller& c = manager_.addController(std::move(options), std::move(reconciler));
  for (auto& w : watches_) {
    MapFunc map = w.map ? w.map : requestForOwner(forKind_.kind, forKind_.group);
    c.watch(manager_.informer(w.informer), map, w.filter);
  }
  return c;
}

}  // namespace lockstep::runtime
