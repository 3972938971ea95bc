// SigningConfig (cluster-scoped, written by the platform): which key signs the
// evidence of which packages, and where it is pushed from. docs/evidence.md.
//
//   spec:
//     repositories: [registry.example/models/]   # package name prefixes; [] every package
//     keySecretRef: {name: lockstep-evidence-key, key: key.pem}
//     registryCredentialsSecretRef: {name: lockstep-evidence-registry}  # optional
//     registryCABundle: "-----BEGIN CERTIFICATE-----..."                 # optional
//
// Both Secrets live in the operator's namespace (never a release's): the key
// an unencrypted P-256 private key in PEM, the credentials a
// kubernetes.io/dockerconfigjson. A package matched by several configs is
// signed by the first by name. Pure. Thread-safety: values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/analysis_provider.h"
#include "common/status.h"

namespace lockstep::api::v1alpha1 {

inline constexpr const char* kDefaultSigningKeyKey = "key.pem";

struct SigningConfigSpec {
  std::vector<std::string> repositories;  // prefixes of "registry/repository"; empty: all
  KeyRef key;                             // keySecretRef
  std::string credentialsSecret;          // registryCredentialsSecretRef.name; "" anonymous
  // registryCABundle: PEM certificates the packages' registry is verified with (a
  // private registry's CA); "" = the operator's --registry-ca-file, else the system roots.
  std::string registryCaPem;
};

// kInvalidArgument naming the field ("spec.keySecretRef.name: is required").
StatusOr<SigningConfigSpec> decodeSigningConfigSpec(const nlohmann::json& spec);

// True when `packageName` ("registry/repository", no digest) is one the spec signs for.
bool signsFor(const SigningConfigSpec& spec, const std::string& packageName);

}  // namespace lockstep::api::v1alpha1
