// The Secret certificate store and the caBundle patcher against a scripted
// transport: the requests they send (golden paths, bodies, resourceVersion),
// how answers map, and that a Secret that is not Lockstep's is never written.
#include "webhooks/kube_cert_store.h"

#include <gtest/gtest.h>

#include "operator/kube/kube_config.h"
#include "tests/support/fake_transport.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeTransport;

constexpr const char* kSecretPath = "/api/v1/namespaces/lockstep-system/secrets/webhook-tls";
constexpr const char* kSecretsPath = "/api/v1/namespaces/lockstep-system/secrets";
constexpr const char* kVwcPath =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/lockstep";
constexpr const char* kMwcPath =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/lockstep";

json secret(const std::string& rv, const json& data,
            const std::string& type = "kubernetes.io/tls") {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", type},
          {"metadata",
           {{"name", "webhook-tls"}, {"namespace", "lockstep-system"}, {"resourceVersion", rv}}},
          {"data", data}};
}

CertBundle bundle(const std::string& tag) {
  return {"ca-crt-" + tag, "ca-key-" + tag, "tls-crt-" + tag, "tls-key-" + tag, ""};
}

class SecretCertStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  SecretCertStore store_{std::make_shared<kube::Client>(transport_), "lockstep-system",
                         "webhook-tls"};
};

TEST_F(SecretCertStoreTest, NoSecretLoadsNothingThenSaveCreatesATlsSecret) {
  transport_->push(FakeTransport::status(404, "NotFound", "secrets \"webhook-tls\" not found"));
  auto loaded = store_.load();
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_FALSE(loaded->has_value());

  CertBundle b = bundle("1");
  b.previousCaCertPem = "ca-previous";
  transport_->push(FakeTransport::ok(secret("7", json::object())));
  ASSERT_TRUE(store_.save(b).isOk());
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, kSecretPath);
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[1].path, kSecretsPath);
  json body = json::parse(reqs[1].body);
  EXPECT_EQ(body["type"], "kubernetes.io/tls");
  EXPECT_EQ(body["metadata"]["name"], "webhook-tls");
  EXPECT_FALSE(body["metadata"].contains("resourceVersion"));
  EXPECT_EQ(body["data"], (json{{"ca.crt", kube::base64Encode("ca-crt-1")},
                                {"ca.key", kube::base64Encode("ca-key-1")},
                                {"tls.crt", kube::base64Encode("tls-crt-1")},
                                {"tls.key", kube::base64Encode("tls-key-1")},
                                {"ca-previous.crt", kube::base64Encode("ca-previous")}}));

  // The next save replaces the Secret it created, guarded by that resourceVersion.
  transport_->push(FakeTransport::ok(secret("8", json::object())));
  ASSERT_TRUE(store_.save(bundle("2")).isOk());
  reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].method, "PUT");
  EXPECT_EQ(reqs[2].path, kSecretPath);
  EXPECT_EQ(json::parse(reqs[2].body)["metadata"]["resourceVersion"], "7");
}

TEST_F(SecretCertStoreTest, LoadsEveryKeyAndSavesWithTheResourceVersionItRead) {
  transport_->push(FakeTransport::ok(secret("41", {{"ca.crt", kube::base64Encode("A")},
                                                   {"ca.key", kube::base64Encode("B")},
                                                   {"tls.crt", kube::base64Encode("C")},
                                                   {"tls.key", kube::base64Encode("D")},
                                                   {"ca-previous.crt", kube::base64Encode("E")}})));
  auto loaded = store_.load();
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->has_value());
  const CertBundle& b = **loaded;
  EXPECT_EQ(b.caCertPem, "A");
  EXPECT_EQ(b.caKeyPem, "B");
  EXPECT_EQ(b.certPem, "C");
  EXPECT_EQ(b.keyPem, "D");
  EXPECT_EQ(b.previousCaCertPem, "E");

  transport_->push(FakeTransport::ok(secret("42", json::object())));
  ASSERT_TRUE(store_.save(bundle("x")).isOk());
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].method, "PUT");
  json body = json::parse(reqs[1].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "41");
  EXPECT_FALSE(body["data"].contains("ca-previous.crt")) << "no previous CA: the key is dropped";
}

TEST_F(SecretCertStoreTest, MalformedKeysAreLoadedAsTheyAreForTheCallerToJudge) {
  // Missing keys and text that is no PEM are not the store's to refuse: the
  // caller names what is wrong and re-issues it over this resourceVersion.
  transport_->push(FakeTransport::ok(
      secret("5", {{"tls.crt", kube::base64Encode("not a certificate")}, {"tls.key", ""}})));
  auto loaded = store_.load();
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->certPem, "not a certificate");
  EXPECT_EQ((*loaded)->caCertPem, "");
  EXPECT_EQ(
      describeBundleProblems(**loaded),
      "ca.crt is missing; tls.crt: " + parseCertificate("not a certificate").status().message());
  transport_->push(FakeTransport::ok(secret("6", json::object())));
  ASSERT_TRUE(store_.save(bundle("new")).isOk());
  EXPECT_EQ(json::parse(transport_->requests()[1].body)["metadata"]["resourceVersion"], "5");
}

TEST_F(SecretCertStoreTest, ASecretOfAnotherTypeIsAnErrorAndNeverWritten) {
  transport_->push(
      FakeTransport::ok(secret("9", {{"password", kube::base64Encode("hunter2")}}, "Opaque")));
  auto loaded = store_.load();
  EXPECT_EQ(loaded.status().code(), Code::kInvalid);
  EXPECT_NE(loaded.status().message().find(
                "Secret lockstep-system/webhook-tls has type \"Opaque\", not kubernetes.io/tls"),
            std::string::npos)
      << loaded.status().toString();
  EXPECT_NE(loaded.status().message().find("--cert-secret"), std::string::npos);
  // A reconcile would stop at the load error; a save anyway must not update theirs.
  transport_->push(FakeTransport::status(409, "AlreadyExists", "secrets \"webhook-tls\" exists"));
  Status saved = store_.save(bundle("x"));
  EXPECT_EQ(saved.code(), Code::kConflict);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].method, "POST") << "create (refused), never an update of their Secret";
}

TEST_F(SecretCertStoreTest, ConflictsAndErrorsMap) {
  // Created by another replica between our load and save: theirs wins.
  transport_->push(FakeTransport::status(404, "NotFound", "not found"));
  ASSERT_TRUE(store_.load().isOk());
  transport_->push(FakeTransport::status(409, "AlreadyExists", "secrets \"webhook-tls\" exists"));
  EXPECT_EQ(store_.save(bundle("1")).code(), Code::kConflict);
  // Changed by another replica since our load.
  transport_->push(FakeTransport::ok(secret("3", json::object())));
  ASSERT_TRUE(store_.load().isOk());
  transport_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  EXPECT_EQ(store_.save(bundle("1")).code(), Code::kConflict);
  // The API server unreachable: an error that names the Secret.
  transport_->push(unavailable("connection refused"));
  auto loaded = store_.load();
  EXPECT_EQ(loaded.status().code(), Code::kUnavailable);
  EXPECT_NE(loaded.status().toString().find("lockstep-system/webhook-tls"), std::string::npos)
      << loaded.status().toString();
  transport_->push(FakeTransport::status(403, "Forbidden", "cannot get secrets"));
  EXPECT_EQ(store_.load().status().code(), Code::kForbidden);
}

json vwc(const std::string& rv, const std::vector<std::string>& caBundles) {
  json hooks = json::array();
  for (size_t i = 0; i < caBundles.size(); ++i) {
    json cc = {{"url", "https://127.0.0.1:9443/validate/" + std::to_string(i)}};
    if (!caBundles[i].empty()) cc["caBundle"] = caBundles[i];
    hooks.push_back({{"name", "hook" + std::to_string(i) + ".lockstep.dev"}, {"clientConfig", cc}});
  }
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingWebhookConfiguration"},
          {"metadata", {{"name", "lockstep"}, {"resourceVersion", rv}}},
          {"webhooks", hooks}};
}

class CaBundlePatcherTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  WebhookConfigCaBundlePatcher patcher_{std::make_shared<kube::Client>(transport_), "lockstep"};
  const std::string pem_ = "-----BEGIN CERTIFICATE-----\nnew\n-----END CERTIFICATE-----\n";
};

TEST_F(CaBundlePatcherTest, ReplacedConfigurationWithAnEmptyCaBundleIsRewritten) {
  const std::string enc = kube::base64Encode(pem_);
  transport_->push(FakeTransport::ok(vwc("10", {"", ""})));
  transport_->push(FakeTransport::ok(vwc("11", {enc, enc})));
  auto wrote = patcher_.patchCaBundle(pem_);
  ASSERT_TRUE(wrote.isOk()) << wrote.status().toString();
  EXPECT_TRUE(*wrote);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, kVwcPath);
  EXPECT_EQ(reqs[1].method, "PUT");
  EXPECT_EQ(reqs[1].path, kVwcPath);
  json body = json::parse(reqs[1].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "10");
  ASSERT_EQ(body["webhooks"].size(), 2u);
  for (const json& w : body["webhooks"]) {
    EXPECT_EQ(w["clientConfig"]["caBundle"], enc) << w.dump();
    EXPECT_TRUE(w["clientConfig"].contains("url")) << "the rest of clientConfig is kept";
  }
}

TEST_F(CaBundlePatcherTest, MatchingCaBundleIsOnlyRead) {
  const std::string enc = kube::base64Encode(pem_);
  transport_->push(FakeTransport::ok(vwc("10", {enc, enc})));
  auto wrote = patcher_.patchCaBundle(pem_);
  ASSERT_TRUE(wrote.isOk()) << wrote.status().toString();
  EXPECT_FALSE(*wrote);
  EXPECT_EQ(transport_->requestCount(), 1u);
}

TEST_F(CaBundlePatcherTest, OneStaleWebhookIsRewrittenAndAConflictIsRetried) {
  const std::string enc = kube::base64Encode(pem_);
  transport_->push(FakeTransport::ok(vwc("10", {enc, kube::base64Encode("old")})));
  transport_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  transport_->push(FakeTransport::ok(vwc("12", {enc, ""})));
  transport_->push(FakeTransport::ok(vwc("13", {enc, enc})));
  auto wrote = patcher_.patchCaBundle(pem_);
  ASSERT_TRUE(wrote.isOk()) << wrote.status().toString();
  EXPECT_TRUE(*wrote);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[2].method, "GET") << "re-read after the conflict";
  json body = json::parse(reqs[3].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "12");
  EXPECT_EQ(body["webhooks"][1]["clientConfig"]["caBundle"], enc);
}

TEST_F(CaBundlePatcherTest, MissingConfigurationIsNotFoundAndNamed) {
  transport_->push(FakeTransport::status(404, "NotFound", "not found"));
  auto wrote = patcher_.patchCaBundle(pem_);
  EXPECT_EQ(wrote.status().code(), Code::kNotFound);
  EXPECT_NE(wrote.status().toString().find("lockstep"), std::string::npos);
  EXPECT_EQ(transport_->requestCount(), 1u);
}

// --mutating-webhook-config: the MutatingWebhookConfiguration gets the same
// caBundle, read first and written only where it differs.
TEST_F(CaBundlePatcherTest, TheMutatingConfigurationIsKeptToo) {
  WebhookConfigCaBundlePatcher both{std::make_shared<kube::Client>(transport_), "lockstep",
                                    "lockstep"};
  const std::string enc = kube::base64Encode(pem_);
  json mwc = vwc("20", {""});
  mwc["kind"] = "MutatingWebhookConfiguration";
  json mwcAfter = vwc("21", {enc});
  mwcAfter["kind"] = "MutatingWebhookConfiguration";
  transport_->push(FakeTransport::ok(vwc("10", {enc})));  // validating: already right
  transport_->push(FakeTransport::ok(mwc));
  transport_->push(FakeTransport::ok(mwcAfter));
  auto wrote = both.patchCaBundle(pem_);
  ASSERT_TRUE(wrote.isOk()) << wrote.status().toString();
  EXPECT_TRUE(*wrote);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].path, kVwcPath);
  EXPECT_EQ(reqs[1].method, "GET");
  EXPECT_EQ(reqs[1].path, kMwcPath);
  EXPECT_EQ(reqs[2].method, "PUT");
  EXPECT_EQ(reqs[2].path, kMwcPath);
  json body = json::parse(reqs[2].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "20");
  EXPECT_EQ(body["webhooks"][0]["clientConfig"]["caBundle"], enc);

  // Both right: two reads, no write. A missing mutating configuration is named.
  transport_->push(FakeTransport::ok(vwc("10", {enc})));
  transport_->push(FakeTransport::ok(mwcAfter));
  auto again = both.patchCaBundle(pem_);
  ASSERT_TRUE(again.isOk());
  EXPECT_FALSE(*again);
  transport_->push(FakeTransport::ok(vwc("10", {enc})));
  transport_->push(FakeTransport::status(404, "NotFound", "not found"));
  auto missing = both.patchCaBundle(pem_);
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().toString().find("MutatingWebhookConfiguration lockstep"),
            std::string::npos)
      << missing.status().toString();
}

}  // namespace
}  // namespace lockstep::webhooks
