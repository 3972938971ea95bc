// What wakes the Model and ModelRelease controllers (pure): the update
// filters of their watches (runtime::UpdateFilter: an update (old, new)
// enqueues only when it returns true), and which releases of a model an event
// of the model's serving objects concerns. Each filter drops a change only of
// fields its reconciler does not read (named below, with the readers that
// decide) or that leaves what it derives from them as it was, and lets every
// other change pass: a field a reader starts to read later is not missed. An update
// with nothing but a new resourceVersion (a relist, a change of a field the
// informer's transform dropped: controllers/common/cached_serving_objects.h)
// enqueues no one. docs/benchmarks.md counts the reconciles these save.
//
// Model controller (model_controller.h, prod/model_conditions.h):
//   - its Deployments: of status and metadata.generation only whether the
//     stable one rolls out (prod/model_conditions.h stableRollingOut: it
//     counts Ready pods itself), and not metadata.annotations (the Deployment
//     controller's revision);
//   - its Service: whether it exists (add, delete) and its owner references.
// ModelRelease controller (modelrelease_controller.h):
//   - the model's Deployments: of status only the admission refusals
//     (prod/canary_observe.h admissionRefusalsOf: ReplicaFailure once the
//     status is about the spec); not the replica counts (a release counts
//     Ready pods itself), nor a status.observedGeneration that reveals none;
//   - the Model: not status.conditions or status.observedGeneration (the
//     Model controller's own writes; no release reads them);
//   - pods and Services: every change but the resourceVersion.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "operator/kube/object.h"

namespace lockstep::controllers {

// The Model controller's filter of its Deployments' updates.
bool deploymentChangeConcernsModel(const kube::Object& oldObj, const kube::Object& newObj);
// The Model controller's filter of its Service's updates.
bool serviceChangeConcernsModel(const kube::Object& oldObj, const kube::Object& newObj);
// The ModelRelease controller's filter of the model's Deployments' updates.
bool deploymentChangeConcernsReleases(const kube::Object& oldObj, const kube::Object& newObj);
// The ModelRelease controller's filter of the Models' updates.
bool modelChangeConcernsReleases(const kube::Object& oldObj, const kube::Object& newObj);
// Any change but metadata.resourceVersion (and managedFields): the
// ModelRelease controller's filter of pods and Services.
bool changedBeyondResourceVersion(const kube::Object& oldObj, const kube::Object& newObj);

// Whether an event of a model's Deployments, Service or ReplicaSets concerns
// `release` (a ModelRelease of that model; `model`: its Model, or null when
// there is none). Not a release that finished without running prod and holds
// nothing there: Failed, RolledBack or Validated, not being deleted, without
// the cleanup finalizer (a finished release lets go of it in a reconcile
// after its status write), named by the Model neither as prod nor as the
// canary slot's holder. Such a release reads the model's objects for nothing
// (no rollback takes prod back to it: api/v1alpha1 takesRollbackRequests; its
// plan is release_plan.cc's finished branch). Every other release is
// concerned: a release in its gates, in its canary, Promoted or Superseded
// (Ready follows the stable Deployment; a rollback target), and one without a
// phase yet (prod's content recognised, docs/rollouts.md "Content identity").
// The Model's own events and the anchors' go to every release of the model.
bool releaseReadsModelObjects(const kube::Object& release, const kube::Object* model);

// The releases an event of `pod` wakes (`model`: the Model its model label
// names, or null): the release named by its release label (a gate Job's pod,
// a serving pod of that release), and, for a serving pod (it carries the track
// label) of another release, the release that holds the model's canary slot.
// That release waits on the stable track's pods, which carry the known-good
// release's label: a rollback restores stable to N Ready pods before the canary
// goes, each canary step shrinks stable only once the new canary pods are
// Ready and the ones it took out are gone, and the handover waits for stable's
// new pods. Without this its 5 s poll was the only wake (docs/benchmarks.md
// "The sized run on a quiet machine"). Not the release prod runs: it is woken
// by its own pods, and the canary's pods tell it nothing.
std::vector<std::string> releasesWokenByPod(const kube::Object& pod, const kube::Object* model);

}  // namespace lockstep::controllers
