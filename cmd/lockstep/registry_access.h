// The CLI's way to a registry, as `tools/image.sh push`, skopeo and oras reach
// one: credentials from a docker config file (--authfile, else
// $REGISTRY_AUTH_FILE, else $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json; none found: anonymous), certificates verified
// against the system roots or the *.crt files of --cert-dir, https only
// (TLS 1.2+). Thread-safety: functions over values.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "operator/registry/distribution.h"

namespace lockstep::cli {

struct RegistryAccess {
  std::string authFile;                       // --authfile; "" the environment's
  std::string certDir;                        // --cert-dir; "" the system roots
  std::chrono::seconds timeout{30};           // per request step
  size_t maxResponseBytes = size_t{8} << 20;  // the largest answer read
};

// The PEM certificates of the *.crt files of `dir`. InvalidArgument naming `flag` and the
// directory when there are none.
StatusOr<std::string> certificates(const std::string& dir, const std::string& flag = "--cert-dir");

// A client for `host` (PackageRef::apiHost()). Errors name the file read.
StatusOr<std::unique_ptr<registry::RegistryClient>> openRegistry(const std::string& host,
                                                                 const RegistryAccess& access);

}  // namespace lockstep::cli
