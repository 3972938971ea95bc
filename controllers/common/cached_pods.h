// The one cache of unfinished pods that controllers share (one list+watch of
// every pod not Succeeded or Failed, in the watched namespaces): the GPU
// capacity pre-check (controllers/modelrelease, docs/rollouts.md "GPU capacity")
// and the drift scan (controllers/drift, docs/supply-chain.md) read it. Each pod
// is slimmed before it is cached to what those readers use, so 10,000 pods cost
// a few MiB: name, namespace, uid, resourceVersion, labels, the lockstep.dev/
// annotations, deletionTimestamp, spec.nodeName, each container's name, image
// and resources, image volumes' references, status.phase. The GPU pre-check
// reads them through kube::PodView (operator/kube/views.h): its gpuRequest,
// phase, nodeName and terminating() read the same of a slimmed pod (a test
// holds it); the view's other fields (conditions, container statuses, owner
// references) read as absent here.
// Thread-safety: the informer's.
#pragma once

#include "operator/kube/informer.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The transform of the shared pod cache (exposed for tests).
void slimPod(kube::Object& pod);

// The informer options of the shared pod cache. The manager keeps one informer per
// resource and selectors, so every controller must ask with these.
kube::InformerOptions unfinishedPods();

}  // namespace lockstep::controllers
