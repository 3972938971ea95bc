// The API resources of Lockstep's own kinds (group lockstep.dev, v1alpha1).
#pragma once

#include "operator/kube/resource.h"

namespace lockstep::controllers {

inline const kube::Resource kRuntimeEnvs{"lockstep.dev", "v1alpha1", "runtimeenvs", "RuntimeEnv",
                                         true};
inline const kube::Resource kModelReleases{"lockstep.dev", "v1alpha1", "modelreleases",
                                           "ModelRelease", true};

}  // namespace lockstep::controllers
