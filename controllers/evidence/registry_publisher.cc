#include "controllers/evidence/registry_publisher.h"

#include <algorithm>
#include <chrono>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"
#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "operator/kube/object.h"
#include "operator/registry/connect.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using nlohmann::json;

constexpr const char* kDockerConfigJsonType = "kubernetes.io/dockerconfigjson";

// The Secret's `key`, base64-decoded; errors name the Secret and the field of the config.
StatusOr<std::pair<std::string, std::string>> secretValue(
    kube::Client& client, const std::string& ns, const std::string& name, const std::string& key,
    const std::string& field, std::string* type = nullptr) {
  const std::string what = "Secret " + ns + "/" + name + " (SigningConfig " + field + ")";
  auto got = client.get(v1::kSecrets, ns, name);
  if (!got.isOk()) {
    if (got.status().code() == Code::kNotFound) return Status(Code::kNotFound, what + " not found");
    return Status(got.status().code(), "reading " + what + ": " + got.status().message());
  }
  if (type) *type = decode::string(*got, "type");
  const json* value = decode::member(decode::object(*got, "data"), key);
  if (value == nullptr || !value->is_string())
    return Status(Code::kNotFound, what + " has no key \"" + key + "\"");
  auto decoded = registry::base64Decode(value->get<std::string>());
  if (!decoded) return invalidArgument(what + " key \"" + key + "\" is not base64");
  return std::make_pair(*decoded,
                        decode::string(decode::object(*got, "metadata"), "resourceVersion"));
}

}  // namespace

RegistryOpener connectingOpener(std::string defaultCaPem) {
  return [defaultCaPem = std::move(defaultCaPem)](
             const std::string& host, const std::optional<registry::Credentials>& credentials,
             const std::string& caPem) -> StatusOr<std::unique_ptr<registry::RegistryClient>> {
    registry::ConnectOptions options;
    options.caPem = caPem.empty() ? defaultCaPem : caPem;
    options.timeout = std::chrono::seconds(20);
    return registry::connectRegistry(host, credentials, options);
  };
}

RegistryPublisher::RegistryPublisher(std::shared_ptr<kube::Client> client,
                                     const kube::Indexer& signingConfigs,
                                     std::string operatorNamespace, RegistryOpener opener)
    : client_(std::move(client)),
      signingConfigs_(signingConfigs),
      operatorNamespace_(std::move(operatorNamespace)),
      opener_(std::move(opener)) {}

StatusOr<std::optional<v1::SigningConfigSpec>> RegistryPublisher::configFor(
    const std::string& packageName) const {
  std::vector<kube::ObjectPtr> configs = signingConfigs_.list();
  std::sort(configs.begin(), configs.end(), [](const kube::ObjectPtr& a, const kube::ObjectPtr& b) {
    return kube::name(*a) < kube::name(*b);
  });
  for (const kube::ObjectPtr& c : configs) {
    const json& spec = decode::object(*c, "spec");
    auto decoded = v1::decodeSigningConfigSpec(spec);
    if (!decoded.isOk()) {
      // One that cannot be read may still be meant for this package: say so
      // rather than sign with another or silently not at all.
      bool mentions = false;
      for (const json& r : decode::array(spec, "repositories"))
        mentions = mentions || (r.is_string() && packageName.rfind(r.get<std::string>(), 0) == 0);
      if (mentions || !spec.contains("repositories"))
        return decoded.status().withContext("SigningConfig " + kube::name(*c));
      continue;
    }
    if (v1::signsFor(*decoded, packageName)) return std::optional<v1::SigningConfigSpec>(*decoded);
  }
  return std::optional<v1::SigningConfigSpec>();
}

StatusOr<RegistryPublisher::Setup> RegistryPublisher::setup(const v1::SigningConfigSpec& config,
                                                            const std::string& host) {
  Setup out;
  const std::string& ns = operatorNamespace_;
  auto key = secretValue(*client_, ns, config.key.name, config.key.key, "spec.keySecretRef");
  if (!key.isOk()) return key.status();
  const std::string cacheKey = config.key.name + "/" + key->second + "/" + config.key.key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = signers_.find(cacheKey); it != signers_.end()) out.signer = it->second;
  }
  if (!out.signer) {
    auto signer = evidence::parseP256PrivateKey(
        key->first, "Secret " + ns + "/" + config.key.name + " key \"" + config.key.key + "\"");
    if (!signer.isOk()) return signer.status();
    out.signer = std::shared_ptr<const evidence::Signer>(std::move(*signer));
    std::lock_guard<std::mutex> lock(mu_);
    signers_[cacheKey] = out.signer;
  }
  auto creds = credentials(config, host);
  if (!creds.isOk()) return creds.status();
  out.credentials = *creds;
  out.caPem = config.registryCaPem;
  return out;
}

StatusOr<std::optional<registry::Credentials>> RegistryPublisher::credentials(
    const v1::SigningConfigSpec& config, const std::string& host) {
  if (config.credentialsSecret.empty()) return std::optional<registry::Credentials>();
  const std::string& ns = operatorNamespace_;
  std::string type;
  auto docker = secretValue(*client_, ns, config.credentialsSecret, ".dockerconfigjson",
                            "spec.registryCredentialsSecretRef", &type);
  if (!docker.isOk()) return docker.status();
  if (type != kDockerConfigJsonType) {
    return invalidArgument("Secret " + ns + "/" + config.credentialsSecret + " has type \"" + type +
                           "\", not " + kDockerConfigJsonType);
  }
  auto creds = registry::credentialsForHost(docker->first, host,
                                            "Secret " + ns + "/" + config.credentialsSecret);
  if (!creds.isOk()) return creds.status();
  return std::optional<registry::Credentials>(*creds);
}

std::vector<EvidenceOutcome> RegistryPublisher::publish(const std::vector<PlannedStatement>& due,
                                                        const std::string& package,
                                                        const Setup& setup,
                                                        const std::string& now) {
  std::vector<EvidenceOutcome> out;
  auto fail = [&](const std::string& error) {
    for (const PlannedStatement& p : due) {
      EvidenceOutcome o;
      o.name = p.name;
      o.predicateType = p.predicateType;
      o.statementDigest = p.digest;
      o.error = error;
      out.push_back(o);
    }
    return out;
  };
  auto ref = registry::parsePackageRef(package);
  if (!ref.isOk()) return fail(ref.status().message());
  auto client = opener_(ref->apiHost(), setup.credentials, setup.caPem);
  if (!client.isOk()) return fail(client.status().message());
  auto subject = (*client)->describe(ref->repository, ref->digest);
  if (!subject.isOk()) return fail(subject.status().message());
  auto existing = (*client)->referrers(ref->repository, ref->digest);
  if (!existing.isOk()) return fail(existing.status().message());
  for (const PlannedStatement& p : due) {
    EvidenceOutcome o;
    o.name = p.name;
    o.predicateType = p.predicateType;
    o.statementDigest = p.digest;
    o.repository = ref->name();
    for (const registry::Descriptor& d : existing->descriptors) {
      auto a = d.annotations.find(kStatementDigestAnnotation);
      if (a != d.annotations.end() && a->second == p.digest) {
        o.referrer = d.digest;
        o.alreadyThere = true;
      }
    }
    if (o.alreadyThere) {
      out.push_back(o);
      continue;
    }
    auto bundle = evidence::signStatement(p.payload, *setup.signer);
    if (!bundle.isOk()) {
      o.error = "signing: " + bundle.status().message();
      out.push_back(o);
      continue;
    }
    registry::Artifact artifact;
    artifact.artifactType = evidence::kBundleMediaType;
    artifact.bytes = bundle->dump();
    // cosign v3's annotations for a bundle referrer, and Lockstep's own.
    artifact.annotations = {{"dev.sigstore.bundle.content", "dsse-envelope"},
                            {"dev.sigstore.bundle.predicateType", p.predicateType},
                            {"org.opencontainers.image.created", now},
                            {kStatementNameAnnotation, p.name},
                            {kStatementDigestAnnotation, p.digest}};
    auto pushed = (*client)->pushReferrer(ref->repository, *subject, artifact);
    if (pushed.isOk()) {
      o.referrer = pushed->digest;
    } else {
      o.error = pushed.status().message();
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace lockstep::controllers
