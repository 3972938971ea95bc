// Whether the API server keeps image volumes (a server-side dry run of a Job):
// servers without the ImageVolume feature silently drop them, and Lockstep
// then mounts packages through an init container (docs/modelrelease.md).
// Thread-safety: stateless.
#pragma once

#include <string>

#include "common/status.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "operator/kube/client.h"

namespace lockstep::controllers {

// Asks the API server (server-side dry run of a Job in `ns`) whether it keeps
// image volumes: servers without the ImageVolume feature silently drop them.
StatusOr<PackageMount> probePackageMount(kube::Client& client, const std::string& ns);

}  // namespace lockstep::controllers
