// Self-managed webhook certificates against the real control plane (issue 13
// item 2, issue 12 item 8): the operator binary keeps the caBundle of the
// chart's ValidatingWebhookConfiguration, and the API server's own calls to
// the webhook (pods created with a server-side dry run in an enforcing
// namespace) show whether it trusts what the operator serves.
#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/kube/kube_config.h"
#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/webhooks/tls_client.h"
#include "webhooks/certs/x509.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
namespace lw = lockstep::webhooks;

const std::string kImage =
    "registry.example/runtimes/torch@sha256:4f1c000000000000000000000000000000000000000000000000"
    "000000000001";
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kSecret = "lockstep-webhook-tls";
// Short rounds so the tests wait for conditions, not for the production cadence.
const std::vector<std::string> kFastRounds = {"--cert-check-interval=1s",
                                              "--cert-ca-propagation-delay=2s"};

std::string decode(const json& data, const char* key) {
  if (!data.contains(key)) return "";
  auto d = kube::base64Decode(data[key].get<std::string>());
  return d.isOk() ? *d : "";
}

json secretData() {
  json s = kubectlJson({"get", "secret", kSecret, "-n", kOperatorNamespace});
  return s.is_discarded() ? json::object() : s.value("data", json::object());
}

// Every webhook's caBundle in both configurations (validating and mutating),
// decoded; "" when any is missing or they differ.
std::string publishedCaBundle() {
  std::string first;
  for (const char* kind : {"validatingwebhookconfiguration", "mutatingwebhookconfiguration"}) {
    json config = kubectlJson({"get", kind, kReleaseName});
    if (config.is_discarded()) return "";
    for (const json& w : config["webhooks"]) {
      std::string b = decode(w["clientConfig"], "caBundle");
      if (b.empty() || (!first.empty() && b != first)) return "";
      first = b;
    }
  }
  return first;
}

class CertsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { OperatorProcess::installClusterPieces(sharedWebhookPort()); }
  // The Secret goes too: these tests rotate the CA, and the next binary on this
  // cluster starts from one CA of its own, not from a rotation in progress.
  static void TearDownTestSuite() {
    OperatorProcess::uninstallWebhooks();
    kubectl({"delete", "secret", kSecret, "-n", kOperatorNamespace, "--ignore-not-found"});
  }
  void TearDown() override {
    for (const auto& ns : namespaces_) kubectl({"delete", "namespace", ns, "--wait=false"});
  }

  // An enforcing namespace with a Ready RuntimeEnv "torch" (needs a running leader).
  void enforcingNamespace() {
    ns_ = uniqueName("certs");
    namespaces_.push_back(ns_);
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"}).exitCode, 0);
    hash_ = applyReadyRuntimeEnv(ns_, "torch", kImage, kLock);
    ASSERT_FALSE(hash_.empty()) << "RuntimeEnv " << ns_ << "/torch never became Ready";
  }

  // Creates a pod with a server-side dry run: the API server calls the webhook
  // (sideEffects None) and nothing is left behind.
  CommandResult dryRunPod(const std::string& image) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", uniqueName("probe")},
                  {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
                  {"annotations", {{"lockstep.dev/closure-hash", hash_}}}}},
                {"spec", {{"containers", json::array({{{"name", "main"}, {"image", image}}})}}}};
    return kubectl({"create", "--dry-run=server", "-n", ns_, "-f", "-"}, pod.dump());
  }
  // The webhook answered: the matching pod is admitted and a foreign image is
  // refused with the webhook's own message (so admission is not bypassed).
  bool webhookAdmits() {
    if (dryRunPod(kImage).exitCode != 0) return false;
    CommandResult foreign = dryRunPod("registry.example/runtimes/torch:2.5");
    return foreign.exitCode != 0 && foreign.err.find("denied the request") != std::string::npos;
  }

  std::vector<std::string> namespaces_;
  std::string ns_;
  std::string hash_;
};

// Issue 13 item 2: `kubectl replace` of the configuration (as a reinstall or
// Argo CD Replace=true does) empties its caBundle; with failurePolicy Fail the
// API server then refuses every pod of an enforcing namespace. The operator
// repairs it without a restart and pods are admitted again.
TEST_F(CertsClusterTest, ACaBundleEmptiedByAReplaceIsRepaired) {
  OperatorProcess op;
  ASSERT_EQ(op.start(kFastRounds), "");
  enforcingNamespace();
  ASSERT_TRUE(eventually([&] { return webhookAdmits(); })) << "admission never worked";
  const std::string published = publishedCaBundle();
  ASSERT_FALSE(published.empty());

  json vwc = kubectlJson({"get", "validatingwebhookconfiguration", kReleaseName});
  ASSERT_FALSE(vwc.is_discarded());
  for (auto& w : vwc["webhooks"]) w["clientConfig"].erase("caBundle");
  vwc["metadata"].erase("resourceVersion");
  CommandResult replaced = kubectl({"replace", "-f", "-"}, vwc.dump());
  ASSERT_EQ(replaced.exitCode, 0) << replaced.err;
  const std::string replacedRv = kubectlJson(
      {"get", "validatingwebhookconfiguration", kReleaseName})["metadata"]["resourceVersion"];

  EXPECT_TRUE(eventually([&] { return publishedCaBundle() == published; }))
      << "caBundle never repaired:\n"
      << op.log();
  EXPECT_TRUE(eventually([&] { return webhookAdmits(); }))
      << "pods are not admitted after the repair:\n"
      << op.log();
  EXPECT_NE(op.log().find("caBundle was changed or emptied"), std::string::npos) << op.log();
  json after = kubectlJson({"get", "validatingwebhookconfiguration", kReleaseName});
  EXPECT_NE(after["metadata"]["resourceVersion"], replacedRv) << "the operator wrote it";
  EXPECT_EQ(op.stop(), "");
}

// Issue 12 item 8: during a CA rotation the caBundle holds two CAs (old and
// new), and a second replica serves the rotated CA it finds in the Secret; the
// API server admits pods through either replica throughout.
TEST_F(CertsClusterTest, TwoCasInTheCaBundleAndASecondReplicaServesTheRotatedCa) {
  OperatorProcess a, b;
  ASSERT_EQ(a.start(kFastRounds), "");
  const int portB = freePort();
  b.useWebhookPort(portB);
  ASSERT_EQ(b.start(kFastRounds), "");
  enforcingNamespace();
  ASSERT_TRUE(eventually([&] { return webhookAdmits(); })) << "admission never worked";

  // Rotate as the replica that reaches the CA's renewal time would: a new CA
  // and serving certificate in the Secret, the old CA kept as the previous one.
  json data = secretData();
  const std::string oldCa = decode(data, "ca.crt");
  ASSERT_FALSE(oldCa.empty());
  lw::CaOptions caOptions;
  caOptions.now = std::chrono::system_clock::now();
  caOptions.commonName = "lockstep-webhook-ca-rotated";
  auto newCa = lw::generateCa(caOptions);
  ASSERT_TRUE(newCa.isOk()) << newCa.status().toString();
  lw::ServingOptions so;
  so.now = caOptions.now;
  so.dnsNames = lw::serviceDnsNames(kReleaseName, kOperatorNamespace);
  so.ipAddresses = {"127.0.0.1"};
  auto serving = lw::generateServingCert(*newCa, so);
  ASSERT_TRUE(serving.isOk()) << serving.status().toString();
  json secret = kubectlJson({"get", "secret", kSecret, "-n", kOperatorNamespace});
  secret["data"] = {{"ca.crt", kube::base64Encode(newCa->certPem)},
                    {"ca.key", kube::base64Encode(newCa->keyPem)},
                    {"tls.crt", kube::base64Encode(serving->certPem)},
                    {"tls.key", kube::base64Encode(serving->keyPem)},
                    {"ca-previous.crt", kube::base64Encode(oldCa)}};
  CommandResult rotated = kubectl({"replace", "-f", "-"}, secret.dump());
  ASSERT_EQ(rotated.exitCode, 0) << rotated.err;

  EXPECT_TRUE(eventually([&] { return publishedCaBundle() == newCa->certPem + oldCa; }))
      << "the caBundle never held both CAs: " << publishedCaBundle();
  // The second replica serves the new certificate (verified against the new CA only).
  EXPECT_TRUE(eventually([&] {
    webhooks::testing::TlsClient c(static_cast<uint16_t>(portB), newCa->certPem);
    return c.connect().empty() && c.peerCertificatePem() == serving->certPem;
  })) << "replica B never served the rotated certificate:\n"
      << b.log();
  // So does the first, and the API server admits through it with two CAs published.
  EXPECT_TRUE(eventually([&] {
    webhooks::testing::TlsClient c(static_cast<uint16_t>(a.webhookPort()), newCa->certPem);
    return c.connect().empty() && c.peerCertificatePem() == serving->certPem;
  })) << "replica A never served the rotated certificate:\n"
      << a.log();
  EXPECT_TRUE(webhookAdmits());

  // Through the second replica: the configuration re-pointed at it.
  json vwc = kubectlJson({"get", "validatingwebhookconfiguration", kReleaseName});
  for (auto& w : vwc["webhooks"]) {
    std::string url = w["clientConfig"]["url"];
    std::string path = url.substr(url.find("/validate/"));
    w["clientConfig"]["url"] = "https://127.0.0.1:" + std::to_string(portB) + path;
  }
  ASSERT_EQ(kubectl({"replace", "-f", "-"}, vwc.dump()).exitCode, 0);
  ASSERT_EQ(a.stop(), "");
  EXPECT_TRUE(eventually([&] { return webhookAdmits(); })) << "not admitted through replica B:\n"
                                                           << b.log();
  EXPECT_EQ(b.stop(), "");
  // Back to the shared port for the other tests.
  for (auto& w : vwc["webhooks"]) {
    std::string url = w["clientConfig"]["url"];
    std::string path = url.substr(url.find("/validate/"));
    w["clientConfig"]["url"] = "https://127.0.0.1:" + std::to_string(sharedWebhookPort()) + path;
  }
  vwc["metadata"].erase("resourceVersion");
  EXPECT_EQ(kubectl({"replace", "-f", "-"}, vwc.dump()).exitCode, 0);
}

// Issue 12 item 8: a malformed certificate Secret at start-up is named in the
// log and re-issued in place; the operator starts and serves.
TEST_F(CertsClusterTest, AMalformedSecretAtStartUpIsNamedAndReissued) {
  kubectl({"delete", "secret", kSecret, "-n", kOperatorNamespace, "--ignore-not-found"});
  json bad = {{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"type", "kubernetes.io/tls"},
              {"metadata", {{"name", kSecret}, {"namespace", kOperatorNamespace}}},
              {"data",
               {{"tls.crt", kube::base64Encode("truncated by a bad restore")},
                {"tls.key", kube::base64Encode("")},
                {"ca.crt", kube::base64Encode("-----BEGIN CERTIFICATE-----\nAAAA\n")}}}};
  ASSERT_EQ(kubectl({"create", "-f", "-"}, bad.dump()).exitCode, 0);

  OperatorProcess op;
  ASSERT_EQ(op.start(kFastRounds), "");
  const std::string log = op.log();
  EXPECT_NE(log.find("stored webhook certificates are malformed"), std::string::npos) << log;
  EXPECT_NE(log.find("ca.crt: "), std::string::npos) << log;
  EXPECT_NE(log.find("tls.crt: "), std::string::npos) << log;

  json data = secretData();
  const std::string ca = decode(data, "ca.crt"), crt = decode(data, "tls.crt");
  EXPECT_TRUE(lw::checkIssuedBy(crt, ca).isOk()) << "the Secret was not repaired";
  EXPECT_TRUE(lw::checkKeyMatchesCert(crt, decode(data, "tls.key")).isOk());
  EXPECT_EQ(publishedCaBundle(), ca);
  enforcingNamespace();
  EXPECT_TRUE(eventually([&] { return webhookAdmits(); })) << op.log();
  EXPECT_EQ(op.stop(), "");
}

// A Secret of that name that is not Lockstep's (another type) is a clear
// start-up error and is left exactly as it was: no write, no lost data.
TEST_F(CertsClusterTest, ASecretOfAnotherTypeIsAClearErrorAndLeftUntouched) {
  kubectl({"delete", "secret", kSecret, "-n", kOperatorNamespace, "--ignore-not-found"});
  json theirs = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata", {{"name", kSecret}, {"namespace", kOperatorNamespace}}},
                 {"data", {{"password", kube::base64Encode("hunter2")}}}};
  ASSERT_EQ(kubectl({"create", "-f", "-"}, theirs.dump()).exitCode, 0);
  json before = kubectlJson({"get", "secret", kSecret, "-n", kOperatorNamespace});

  OperatorProcess op;
  std::string failed = op.start(kFastRounds);
  EXPECT_NE(failed.find("operator exited"), std::string::npos) << failed;
  EXPECT_NE(failed.find("lockstep-operator: webhook certificates: "), std::string::npos) << failed;
  EXPECT_NE(failed.find("Secret lockstep-system/lockstep-webhook-tls has type \"Opaque\", not "
                        "kubernetes.io/tls"),
            std::string::npos)
      << failed;
  json after = kubectlJson({"get", "secret", kSecret, "-n", kOperatorNamespace});
  EXPECT_EQ(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
  EXPECT_EQ(after["data"], before["data"]);
  EXPECT_EQ(after["type"], "Opaque");
  kubectl({"delete", "secret", kSecret, "-n", kOperatorNamespace});
}

}  // namespace
}  // namespace lockstep::testing
