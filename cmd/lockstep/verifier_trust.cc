#include "cmd/lockstep/verifier_trust.h"

#include <sstream>

#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/manifest_file.h"
#include "evidence/ecdsa_p256.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;

constexpr size_t kMaxKeyBytes = size_t{1} << 20;
constexpr size_t kMaxPolicyBytes = size_t{16} << 20;

}  // namespace

std::vector<evidence::TrustedKey> VerifierTrust::keysFor(const std::string& package) const {
  std::vector<evidence::TrustedKey> out = keyFiles;
  for (const evidence::TrustedKey& k : policyKeys)
    if (trusts(k.name, package, "")) out.push_back(k);
  return out;
}

bool VerifierTrust::trusts(const std::string& keyName, const std::string& package,
                           const std::string& stage) const {
  for (const evidence::TrustedKey& k : keyFiles)
    if (k.name == keyName) return true;
  for (const auto& [name, spec] : policies) {
    if (keyName.rfind(name + "/", 0) != 0) continue;
    if (api::v1alpha1::trustedKeyNames(spec, package, stage).count(keyName.substr(name.size() + 1)))
      return true;
  }
  return false;
}

StatusOr<std::vector<evidence::TrustedKey>> readTrustedKeys(const std::string& list) {
  std::vector<evidence::TrustedKey> keys;
  std::stringstream in(list);
  for (std::string path; std::getline(in, path, ',');) {
    if (path.empty()) continue;
    auto pem = readFile(path, kMaxKeyBytes);
    if (!pem.isOk()) return pem.status();
    auto key = evidence::parseP256PublicKey(*pem, path);
    if (!key.isOk()) return key.status();
    keys.push_back({path, *key});
  }
  if (keys.empty()) return invalidArgument("--key: no key file given");
  return keys;
}

Status addTrustPolicies(const std::string& text, const std::string& source, VerifierTrust& trust) {
  auto file = ManifestFile::parse(text, source);
  if (!file.isOk()) return file.status();
  const json& doc = file->json();
  std::vector<std::pair<std::string, const json*>> objects;  // field prefix, object
  if (doc.is_object() && doc.value("kind", "") == "List" && doc.contains("items") &&
      doc["items"].is_array()) {
    for (size_t i = 0; i < doc["items"].size(); ++i)
      objects.emplace_back("items[" + std::to_string(i) + "].", &doc["items"][i]);
  } else {
    objects.emplace_back("", &doc);
  }
  for (const auto& [prefix, o] : objects) {
    if (!o->is_object() || o->value("kind", "") != "TrustPolicy")
      return invalidArgument(file->at(prefix + "kind") + ": " + prefix + "kind: not a TrustPolicy");
    std::string name = "unnamed";
    if (const json* n = &(*o)["metadata"]["name"]; n->is_string()) name = n->get<std::string>();
    auto spec = api::v1alpha1::decodeTrustPolicySpec(o->value("spec", json::object()));
    if (!spec.isOk())
      return invalidArgument(file->locate(prefix + spec.status().message()) + " (TrustPolicy " +
                             name + ")");
    for (size_t i = 0; i < spec->keys.size(); ++i) {
      const auto& k = spec->keys[i];
      const std::string field = prefix + "spec.keys[" + std::to_string(i) + "].publicKey";
      auto key = evidence::parseP256PublicKey(k.publicKey, file->at(field) + ": " + field);
      if (!key.isOk()) return key.status();
      trust.policyKeys.push_back({name + "/" + k.name, *key});
    }
    trust.policies.emplace_back(name, std::move(*spec));
  }
  return Status::ok();
}

StatusOr<VerifierTrust> loadTrust(const std::string& keyList, const std::string& policyFile) {
  VerifierTrust trust;
  if (!keyList.empty()) {
    auto keys = readTrustedKeys(keyList);
    if (!keys.isOk()) return keys.status();
    trust.keyFiles = std::move(*keys);
  }
  if (!policyFile.empty()) {
    auto text = readFile(policyFile, kMaxPolicyBytes);
    if (!text.isOk()) return text.status();
    LOCKSTEP_RETURN_IF_ERROR(
        addTrustPolicies(*text, policyFile == "-" ? "stdin" : policyFile, trust));
  }
  return trust;
}

}  // namespace lockstep::cli
