// What the operator caches of a model's serving objects: the Deployments
// <model>-stable and <model>-canary, the Service <model>, and the pods of a
// release (its serving pods and its gate Jobs' pods). Each informer slims an
// object to what its readers read before caching it (cached objects are
// shared and held for as long as the object exists: at 10,000 models these
// caches hold 10,000 of each; docs/benchmarks.md "What each cache holds").
// The Manager keeps one informer per resource and selectors, whatever the
// transform, so every set-up asks with the options below (the ModelRelease
// and Model controllers, and the webhooks' lookups in cmd/lockstep-operator).
//
// Readers, and the fields each reads:
//
// Kept of metadata: name, namespace, uid, resourceVersion, generation,
// creationTimestamp, deletionTimestamp, labels, annotations, ownerReferences
// (kube::MetaView's); dropped: managedFields, finalizers, generateName, ....
// Kept of a status condition: type, status, reason, message
// (kube::ConditionView's); dropped: its times.
//
// Deployment (slimDeployment): metadata, spec.replicas, spec.template whole,
// status.observedGeneration, replicas, readyReplicas, updatedReplicas,
// availableReplicas, conditions. Dropped: the other spec fields (selector,
// strategy, progressDeadlineSeconds, revisionHistoryLimit, paused, ...) and
// of status (unavailableReplicas, collisionCount, ...).
//   - the serving rule (api/v1alpha1/serving_pod.h, the pod webhook and the
//     controllers): name, uid, labels, ownerReferences;
//   - prod healing and a canary's edited-track check (deploymentDrift,
//     prod/serving_objects.h): spec.replicas and the whole pod template (a
//     "contains" compare of what Lockstep sets, which may be any field of the
//     release's template); templateHashPatch: metadata.annotations;
//   - canary observe, Model conditions, the serving label's switch
//     (kube::viewDeployment): metadata (generation, deletionTimestamp),
//     spec.replicas, the template's labels and annotations, status
//     (observedGeneration, the replica counts, conditions: ReplicaFailure's
//     reason and message are an admission refusal);
//   - ownedWrite and the scale patches: metadata.uid; every reader:
//     metadata.deletionTimestamp (isBeingDeleted);
//   - the Model controller's owns(): metadata.ownerReferences.
//
// Service (slimService): metadata, spec.type, spec.selector, spec.ports.
// Dropped: managedFields, clusterIP(s), ipFamilies, ipFamilyPolicy,
// internalTrafficPolicy, sessionAffinity, the other spec fields, status.
//   - prod healing and a canary's placement (serviceHolds, serviceDrift):
//     metadata.labels, metadata.ownerReferences, and every spec field
//     buildModelService sets (type, selector, ports; a test holds that each
//     one it sets survives the slimming);
//   - the release webhook's port rule (webhooks/informer_lookups.h) and
//     prodPort: labels, spec.ports[].port;
//   - ownership (NameConflict): labels, ownerReferences; ownedWrite:
//     metadata.uid; every reader: metadata.deletionTimestamp; the Model
//     controller: whether it exists and its owner.
//
// Pod of a release (slimReleasePod, the pods labelled lockstep.dev/release:
// serving pods and gate Jobs' pods): metadata; of spec only nodeName and each
// container's and init container's name, image and resources; of status
// phase, reason, message, conditions, and of each of containerStatuses and
// initContainerStatuses name, ready, restartCount, state, lastState.
// Dropped: the rest of spec (env, command, args, probes, ports,
// volumeMounts, volumes, tolerations, ...) and of status (IPs, qosClass,
// startTime, the containers' image, imageID, containerID, started).
//   - the serving rule and servingPodsOf: labels, ownerReferences;
//   - canary observe, serving health, Model conditions (kube::viewPod):
//     metadata (creationTimestamp orders pods; deletionTimestamp; the
//     lockstep.dev/ annotations: package, closure hash), spec.nodeName, the
//     containers' GPU requests (resources), status (phase, conditions and
//     their messages, containerStatuses);
//   - containerFailure (verification failures): status.initContainerStatuses
//     and containerStatuses, state and lastState;
//   - the gates (gate_plan.cc): labels (job-name), status.phase, the
//     containers' terminated state and termination message.
// Thread-safety: pure functions; the informers' own.
#pragma once

#include "operator/kube/informer.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The transforms (exposed for tests).
void slimDeployment(kube::Object& deployment);
void slimService(kube::Object& service);
void slimReleasePod(kube::Object& pod);

// The informer options of the caches above: the objects labelled with a
// model (Deployments, Services) or a release (pods), server-side.
kube::InformerOptions modelDeployments();
kube::InformerOptions modelServices();
kube::InformerOptions releasePods();

// The other half of a resource: the objects WITHOUT the lockstep.dev/model
// label (selector `!lockstep.dev/model`), metadata only (the API server's
// PartialObjectMetadata), trimmed to name, namespace, uid, resourceVersion,
// labels, ownerReferences and deletionTimestamp. With the labelled cache it
// says what stands at a name without a GET: an object in neither is absent
// (the prod stage's ownership check, prod/ownership.h, reads only those fields,
// and an object without the label is never Lockstep's). Lockstep's own objects
// carry the label, so their events never reach this watch.
kube::InformerOptions unlabelledMetadata(const kube::Resource& resource);
void trimToOwnership(kube::Object& object);

}  // namespace lockstep::controllers
