#include "api/v1alpha1/signing_config.h"

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

Status badSigningConfig(const std::string& field, const std::string& why) {
  return invalidArgument("spec." + field + ": " + why);
}

}  // namespace

StatusOr<SigningConfigSpec> decodeSigningConfigSpec(const json& spec) {
  SigningConfigSpec out;
  if (const json* repos = decode::member(spec, "repositories"); repos != nullptr) {
    if (!repos->is_array()) return badSigningConfig("repositories", "must be a list of prefixes");
    for (size_t i = 0; i < repos->size(); ++i) {
      const json& r = (*repos)[i];
      if (!r.is_string() || r.get<std::string>().empty())
        return badSigningConfig("repositories[" + std::to_string(i) + "]",
                                "must be a non-empty string");
      out.repositories.push_back(r.get<std::string>());
    }
  }
  const json* key = decode::member(spec, "keySecretRef");
  if (key == nullptr) return badSigningConfig("keySecretRef", "is required");
  if (!key->is_object()) return badSigningConfig("keySecretRef", "must be an object {name, key}");
  out.key.name = decode::string(*key, "name");
  out.key.key = decode::string(*key, "key");
  if (out.key.name.empty()) return badSigningConfig("keySecretRef.name", "is required");
  if (decode::member(*key, "namespace") != nullptr)
    return badSigningConfig(
        "keySecretRef.namespace",
        "is not accepted: the Secret is always read in the operator's namespace");
  if (out.key.key.empty()) out.key.key = kDefaultSigningKeyKey;
  if (const json* creds = decode::member(spec, "registryCredentialsSecretRef"); creds != nullptr) {
    if (!creds->is_object())
      return badSigningConfig("registryCredentialsSecretRef", "must be an object {name}");
    if (decode::member(*creds, "namespace") != nullptr)
      return badSigningConfig(
          "registryCredentialsSecretRef.namespace",
          "is not accepted: the Secret is always read in the operator's namespace");
    out.credentialsSecret = decode::string(*creds, "name");
    if (out.credentialsSecret.empty())
      return badSigningConfig("registryCredentialsSecretRef.name", "is required");
  }
  if (const json* ca = decode::member(spec, "registryCABundle"); ca != nullptr) {
    if (!ca->is_string()) return badSigningConfig("registryCABundle", "must be PEM text");
    out.registryCaPem = ca->get<std::string>();
    if (out.registryCaPem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      return badSigningConfig("registryCABundle",
                              "holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  return out;
}

bool signsFor(const SigningConfigSpec& spec, const std::string& packageName) {
  if (spec.repositories.empty()) return true;
  for (const std::string& prefix : spec.repositories)
    if (packageName.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace lockstep::api::v1alpha1
