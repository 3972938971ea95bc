// Admission policy against the real control plane: the operator binary serves
// the chart's ValidatingWebhookConfiguration (URL on 127.0.0.1, caBundle
// patched in by the operator) and reads its informer caches.
//
// Built twice (tests/webhooks/CMakeLists.txt): admission_cluster_test with the chart's
// admission.mode=webhook, admission_policy_cluster_test with admission.mode=policy (the pod
// ValidatingAdmissionPolicies, against the RuntimeAdmission tables the operator keeps). The
// same cases hold in both; where policy mode differs by design (docs/security.md "Admission
// inside the API server"), the test says so beside the expectation.
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

#ifdef LOCKSTEP_ADMISSION_POLICY
constexpr bool kPolicyMode = true;
#else
constexpr bool kPolicyMode = false;
#endif
const std::string kMode = kPolicyMode ? "policy" : "webhook";
// How a refusal of the pod rule starts, and the words of a refusal in an Event.
const std::string kPodDenial = kPolicyMode
                                   ? "ValidatingAdmissionPolicy 'lockstep-pod-"
                                   : "admission webhook \"pods.lockstep.dev\" denied the request";
const std::string kDeniedWords = kPolicyMode ? "denied request" : "denied the request";

const std::string kDigest =
    "sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kOtherDigest = "sha256:" + std::string(64, '9');
const std::string kImage = "registry.example/runtimes/torch@" + kDigest;
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";

// Builder for pod manifests under test.
class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_ = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", std::move(name)}, {"labels", {{"lockstep.dev/runtime-env", "torch"}}}}},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"image", kImage}}})}}}};
  }
  PodBuilder& hash(const std::string& h) {
    pod_["metadata"]["annotations"]["lockstep.dev/closure-hash"] = h;
    return *this;
  }
  PodBuilder& image(const std::string& i) {
    pod_["spec"]["containers"][0]["image"] = i;
    return *this;
  }
  PodBuilder& initContainer(const std::string& image) {
    pod_["spec"]["initContainers"] = json::array({{{"name", "setup"}, {"image", image}}});
    return *this;
  }
  PodBuilder& noRuntimeLabel() {
    pod_["metadata"].erase("labels");
    return *this;
  }
  std::string yaml() const { return pod_.dump(); }

 private:
  json pod_;
};

class AdmissionClusterTest : public OperatorSuite<AdmissionClusterTest> {
 protected:
  static void SetUpTestSuite() { startOperator({}, kMode); }
  void TearDown() override {
    printOperatorLogOnFailure();
    // With the webhook still installed, namespaces must finish deleting: a pod stuck in
    // Terminating (a write the webhook refused to a controller) fails the test here.
    for (const auto& ns : namespaces_) {
      auto r = kubectl({"delete", "namespace", ns, "--timeout=120s"});
      EXPECT_EQ(r.exitCode, 0) << "namespace " << ns << " did not finish deleting: " << r.err
                               << kubectl({"get", "pods", "-n", ns, "-o", "wide"}).out;
    }
  }

  // A namespace in `mode` with a Ready RuntimeEnv "torch"; returns its closure hash.
  std::string namespaceWithRuntime(const std::string& mode, std::string& ns) {
    ns = uniqueName("adm-" + mode);
    namespaces_.push_back(ns);
    EXPECT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
    if (mode != "unset") {
      EXPECT_EQ(kubectl({"label", "namespace", ns, "lockstep.dev/enforce=" + mode}).exitCode, 0);
    }
    std::string hash = applyReadyRuntimeEnv(ns, "torch", kImage, kLock);
    EXPECT_FALSE(hash.empty()) << "RuntimeEnv " << ns << "/torch never became Ready";
    if (kPolicyMode) {
      // The policy admits on the operator's table, written right after the RuntimeEnv's status.
      EXPECT_TRUE(eventually([&] {
        json t = kubectlJson({"get", "runtimeadmission", "lockstep-runtimes", "-n", ns});
        return !t.is_discarded() && t["spec"]["runtimeEnvs"]["torch"].value("ready", false);
      })) << "RuntimeAdmission "
          << ns << "/lockstep-runtimes never listed torch as Ready";
    }
    return hash;
  }

  CommandResult create(const std::string& ns, const std::string& manifest) {
    return kubectl({"create", "-n", ns, "-f", "-"}, manifest);
  }

  // Pods counted with `decision`: the webhook's lockstep_admission_requests_total, or in policy
  // mode the API server's own count of the pod-runtime policy's decisions (an audit decision is
  // an annotation in the API server's audit log; no request reaches Lockstep).
  double metric(const std::string& decision) {
    if (kPolicyMode) {
      std::regex re("apiserver_validating_admission_policy_check_total\\{([^}]*)\\} ([0-9.e+]+)");
      std::string text = kubectl({"get", "--raw", "/metrics"}).out;
      const std::string action = decision == "audited" ? "audit" : decision;
      double total = 0;
      for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
        std::string labels = (*it)[1];
        if (labels.find("policy=\"lockstep-pod-runtime\"") != std::string::npos &&
            labels.find("enforcement_action=\"" + action + "\"") != std::string::npos) {
          total += std::stod((*it)[2]);
        }
      }
      return total;
    }
    std::regex re("lockstep_admission_requests_total\\{([^}]*)\\} ([0-9.e+]+)");
    std::string text = op_->scrapeMetrics();
    double total = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      std::string labels = (*it)[1];
      if (labels.find("webhook=\"pods\"") != std::string::npos &&
          labels.find("decision=\"" + decision + "\"") != std::string::npos) {
        total += std::stod((*it)[2]);
      }
    }
    return total;
  }

  std::vector<std::string> namespaces_;
};

TEST_F(AdmissionClusterTest, MatchingPodIsAdmitted) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  ASSERT_FALSE(hash.empty());
  auto r = create(ns, PodBuilder("good").hash(hash).yaml());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err.find("Warning"), std::string::npos) << r.err;
  // kubectl run too, the way a user would.
  r = kubectl({"run", "good-run", "-n", ns, "--image=" + kImage, "--restart=Never",
               "--labels=lockstep.dev/runtime-env=torch",
               "--annotations=lockstep.dev/closure-hash=" + hash});
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

struct Violation {
  std::string what;
  std::function<PodBuilder(const std::string& hash)> pod;
  std::string message;  // must appear in kubectl's error
};

std::vector<Violation> violations() {
  return {
      {"wrong hash",
       [](const std::string&) { return PodBuilder("p").hash("sha256:" + std::string(64, '0')); },
       "lockstep.dev/closure-hash is \"sha256:0000"},
      {"missing annotation", [](const std::string&) { return PodBuilder("p"); },
       "lockstep.dev/closure-hash is missing; expected \"sha256:"},
      {"image by tag",
       [](const std::string& h) {
         return PodBuilder("p").hash(h).image("registry.example/runtimes/torch:2.5");
       },
       "is not pinned by digest"},
      {"different digest",
       [](const std::string& h) {
         return PodBuilder("p").hash(h).image("registry.example/runtimes/torch@" + kOtherDigest);
       },
       "has digest \"" + kOtherDigest + "\""},
      {"foreign init container",
       [](const std::string& h) {
         return PodBuilder("p").hash(h).initContainer("registry.example/tools/setup@" + kDigest);
       },
       "init container \"setup\""},
      {"undeclared runtime in enforce namespace",
       [](const std::string&) { return PodBuilder("p").noRuntimeLabel(); },
       "lockstep.dev/runtime-env"},
  };
}

TEST_F(AdmissionClusterTest, EnforceDeniesEachViolationWithAMessage) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  for (const auto& v : violations()) {
    SCOPED_TRACE(v.what);
    auto r = create(ns, v.pod(hash).yaml());
    EXPECT_NE(r.exitCode, 0) << "admitted: " << v.what;
    EXPECT_NE(r.err.find(kPodDenial), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(v.message), std::string::npos) << r.err;
  }
}

// A GitOps sync creates an enforcing namespace and its workloads in one go:
// the pod reaches the webhook before (or just after) the namespace reaches the
// operator's cache. A namespace missing from the cache must never count as
// unlabelled (issue 13, item 1): every unlabelled pod below is refused.
TEST_F(AdmissionClusterTest, PodInANamespaceCreatedAMomentAgoIsRefused) {
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  std::vector<std::string> created;
  for (int i = 0; i < 8; ++i) {
    std::string ns = uniqueName("adm-sync");
    namespaces_.push_back(ns);
    created.push_back(ns);
    list["items"].push_back(
        {{"apiVersion", "v1"},
         {"kind", "Namespace"},
         {"metadata", {{"name", ns}, {"labels", {{"lockstep.dev/enforce", "enforce"}}}}}});
    json pod = json::parse(PodBuilder("synced").noRuntimeLabel().yaml());
    pod["metadata"]["namespace"] = ns;
    list["items"].push_back(pod);
  }
  // One apply, in order: each pod is created right after its namespace.
  CommandResult r = kubectl({"apply", "-f", "-"}, list.dump());
  EXPECT_NE(r.exitCode, 0) << r.out;
  for (const std::string& ns : created) {
    EXPECT_NE(r.err.find("pod \"" + ns + "/synced\""), std::string::npos)
        << "pod " << ns << "/synced was not refused by the webhook:\n"
        << r.err;
    CommandResult get =
        kubectl({"get", "pod", "synced", "-n", ns, "--ignore-not-found", "-o", "name"});
    EXPECT_EQ(get.out, "") << "pod " << ns << "/synced was admitted";
  }
}

TEST_F(AdmissionClusterTest, EphemeralContainerWithForeignImageIsDenied) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  ASSERT_EQ(create(ns, PodBuilder("target").hash(hash).yaml()).exitCode, 0);
  json patch = {{"spec",
                 {{"ephemeralContainers", json::array({{{"name", "debug"},
                                                        {"image", "registry.example/busybox:1.36"},
                                                        {"targetContainerName", "main"}}})}}}};
  auto r = kubectl({"patch", "pod", "target", "-n", ns, "--subresource=ephemeralcontainers",
                    "--type=strategic", "-p", patch.dump()});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("ephemeral container \"debug\""), std::string::npos) << r.err;
  // The runtime's own image is allowed as a debug container.
  patch["spec"]["ephemeralContainers"][0]["image"] = kImage;
  r = kubectl({"patch", "pod", "target", "-n", ns, "--subresource=ephemeralcontainers",
               "--type=strategic", "-p", patch.dump()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(AdmissionClusterTest, WarnNamespaceAdmitsWithWarnings) {
  std::string ns;
  std::string hash = namespaceWithRuntime("warn", ns);
  int i = 0;
  for (const auto& v : violations()) {
    SCOPED_TRACE(v.what);
    json pod = json::parse(v.pod(hash).yaml());
    pod["metadata"]["name"] = "w" + std::to_string(i++);
    auto r = create(ns, pod.dump());
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("Warning:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(v.message), std::string::npos) << r.err;
  }
}

TEST_F(AdmissionClusterTest, AuditNamespaceAdmitsAndCounts) {
  std::string ns;
  std::string hash = namespaceWithRuntime("audit", ns);
  double before = metric("audited");
  auto r = create(ns, PodBuilder("a1").hash("sha256:" + std::string(64, '0')).yaml());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = create(ns, PodBuilder("a2").hash(hash).image("registry.example/runtimes/torch:2.5").yaml());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(metric("audited") - before, 2.0) << op_->scrapeMetrics();
  EXPECT_EQ(r.err.find("Warning"), std::string::npos) << r.err;
}

TEST_F(AdmissionClusterTest, DeploymentWithWrongHashShowsFailedCreateOnReplicaSet) {
  std::string ns;
  namespaceWithRuntime("enforce", ns);
  json deploy = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "serve"}}},
      {"spec",
       {{"replicas", 2},
        {"selector", {{"matchLabels", {{"app", "serve"}}}}},
        {"template",
         {{"metadata",
           {{"labels", {{"app", "serve"}, {"lockstep.dev/runtime-env", "torch"}}},
            {"annotations", {{"lockstep.dev/closure-hash", "sha256:" + std::string(64, '1')}}}}},
          {"spec", {{"containers", json::array({{{"name", "s"}, {"image", kImage}}})}}}}}}}};
  ASSERT_EQ(create(ns, deploy.dump()).exitCode, 0);
  std::string events;
  EXPECT_TRUE(eventually([&] {
    events = kubectl({"get", "events", "-n", ns, "--field-selector", "reason=FailedCreate"}).out;
    return events.find(kDeniedWords) != std::string::npos;
  })) << events;
  EXPECT_NE(events.find("replicaset/serve-"), std::string::npos) << events;
  EXPECT_NE(events.find("lockstep.dev/closure-hash is \"sha256:1111"), std::string::npos) << events;
  json rs = kubectlJson({"get", "rs", "-n", ns, "-l", "app=serve"});
  ASSERT_EQ(rs["items"].size(), 1u);
  EXPECT_EQ(rs["items"][0]["status"].value("readyReplicas", 0), 0);
}

// Issue 29 (docs/security.md "Only Lockstep's pods are prod"): the serving
// label lockstep.dev/serving, which a model's Service selects on, is refused on
// a pod Lockstep's ReplicaSets did not create, even one that passes the
// runtime rule and is written by a cluster admin; the refusal names the label.
// A ReplicaSet of one's own making cannot lend it to its pods either: the
// webhook refuses its pods (FailedCreate), the policy refuses the ReplicaSet
// itself (only the Deployment controller makes one whose template carries the
// label).
TEST_F(AdmissionClusterTest, TheServingLabelIsRefusedOnPodsLockstepDidNotBuild) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  json pod = json::parse(PodBuilder("impostor").hash(hash).yaml());
  pod["metadata"]["labels"].update({{"lockstep.dev/model", "gpt2"},
                                    {"lockstep.dev/track", "stable"},
                                    {"lockstep.dev/release", "v1"},
                                    {"app.kubernetes.io/component", "serving"},
                                    {"lockstep.dev/serving", "true"}});
  auto refused = create(ns, pod.dump());
  EXPECT_NE(refused.exitCode, 0);
  const std::string denial = kPolicyMode
                                 ? "ValidatingAdmissionPolicy 'lockstep-serving-pods'"
                                 : "admission webhook \"pods.lockstep.dev\" denied the request";
  EXPECT_NE(refused.err.find(denial), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("pod \"" + ns +
                             "/impostor\": label lockstep.dev/serving is reserved for the serving "
                             "pods Lockstep builds"),
            std::string::npos)
      << refused.err;
  // Without the label the same pod is only a pod (it passes the runtime rule).
  pod["metadata"]["labels"].erase("lockstep.dev/serving");
  auto plain = create(ns, pod.dump());
  EXPECT_EQ(plain.exitCode, 0) << plain.err;

  json rs = {{"apiVersion", "apps/v1"},
             {"kind", "ReplicaSet"},
             {"metadata", {{"name", "gpt2-stable-own"}}},
             {"spec",
              {{"replicas", 1},
               {"selector", {{"matchLabels", {{"app", "own"}}}}},
               {"template", json::parse(PodBuilder("x").hash(hash).yaml())}}}};
  rs["spec"]["template"].erase("apiVersion");
  rs["spec"]["template"].erase("kind");
  rs["spec"]["template"]["metadata"].erase("name");
  rs["spec"]["template"]["metadata"]["labels"].update(
      {{"app", "own"}, {"lockstep.dev/model", "gpt2"}, {"lockstep.dev/serving", "true"}});
  auto made = create(ns, rs.dump());
  if (kPolicyMode) {
    EXPECT_NE(made.exitCode, 0);
    EXPECT_NE(made.err.find("ValidatingAdmissionPolicy 'lockstep-serving-replicasets'"),
              std::string::npos)
        << made.err;
    EXPECT_NE(made.err.find("its pod template carries label lockstep.dev/serving"),
              std::string::npos)
        << made.err;
    return;
  }
  ASSERT_EQ(made.exitCode, 0) << made.err;
  std::string events;
  EXPECT_TRUE(eventually([&] {
    events = kubectl({"get", "events", "-n", ns, "--field-selector", "reason=FailedCreate"}).out;
    return events.find("lockstep.dev/serving") != std::string::npos;
  })) << events;
  EXPECT_NE(events.find("is not owned by the Deployment gpt2-stable or gpt2-canary"),
            std::string::npos)
      << events;
  EXPECT_EQ(kubectlJson({"get", "rs", "gpt2-stable-own", "-n", ns})["status"].value("replicas", 0),
            0);
}

TEST_F(AdmissionClusterTest, ModelReleaseWebhookChecksTheRuntimeEnv) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  auto release = [&](const std::string& name, const std::string& rte, const std::string& h) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
                 {"runtimeEnvRef", {{"name", rte}}},
                 {"closureHash", h},
                 {"stages",
                  json::array({{{"name", "eval"}, {"gate", {{"template", json::object()}}}}})}}}};
    return create(ns, mr.dump());
  };
  auto r = release("ok", "torch", hash);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = release("mismatch", "torch", "sha256:" + std::string(64, '2'));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("modelreleases.lockstep.dev"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(hash), std::string::npos) << r.err;
  r = release("early", "not-yet", "sha256:" + std::string(64, '2'));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("Warning:"), std::string::npos) << r.err;
}

// Runs last in this binary (gtest keeps declaration order): it stops the operator.
// Issue 12 item 2: a RuntimeEnv whose status describes an older generation is not Ready, so a
// pod is never admitted on the old status. The status is kept stale on purpose: a Lease held
// by a "ghost" keeps this replica's controllers from running, while its webhook (every
// replica serves) answers from the informer cache that has seen the edit.
TEST_F(AdmissionClusterTest, APodIsNotAdmittedOnTheStatusOfAnOlderGeneration) {
  std::string ns;
  std::string hash = namespaceWithRuntime("enforce", ns);
  ASSERT_FALSE(hash.empty());
  op_->stop();  // exits 0 and releases the lease (checked by stop())
  const std::string lease =
      json({{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", {{"name", "lockstep-operator"}, {"namespace", kOperatorNamespace}}},
            {"spec",
             {{"holderIdentity", "ghost"},
              {"leaseDurationSeconds", 3600},
              {"renewTime", "2099-01-01T00:00:00.000000Z"}}}})
          .dump();
  auto held = kubectl({"apply", "-f", "-"}, lease);
  ASSERT_EQ(held.exitCode, 0) << held.err;
  ASSERT_EQ(op_->start({"--admission-mode=" + kMode}), "");

  // A new lock: generation 2, while the status still describes generation 1 with `hash`.
  const std::string newLock = "numpy==2.0.0 --hash=sha256:" + std::string(64, 'c') + "\n";
  auto edit = kubectl({"patch", "rte", "torch", "-n", ns, "--type=merge", "-p",
                       json({{"spec", {{"lock", {{"inline", newLock}}}}}}).dump()});
  ASSERT_EQ(edit.exitCode, 0) << edit.err;
  json rte = kubectlJson({"get", "rte", "torch", "-n", ns});
  ASSERT_EQ(rte["metadata"].value("generation", 0), 2);
  ASSERT_EQ(rte["status"].value("observedGeneration", 0), 1) << "the controllers must not run";

  if (kPolicyMode) {
    // Policy mode admits on the table the leader last wrote (docs/security.md, "Admission
    // inside the API server"): with no leader the table still says generation 1 is Ready, so
    // the old pair is admitted, and every other pod is still checked, with no operator call.
    CommandResult old = kubectl({"create", "-n", ns, "--dry-run=server", "-f", "-"},
                                PodBuilder("stale").hash(hash).yaml());
    EXPECT_EQ(old.exitCode, 0) << old.err;
    CommandResult wrong =
        kubectl({"create", "-n", ns, "--dry-run=server", "-f", "-"},
                PodBuilder("wrong").hash("sha256:" + std::string(64, '0')).yaml());
    EXPECT_NE(wrong.exitCode, 0) << "admitted with a wrong closure hash";
    EXPECT_NE(wrong.err.find(kPodDenial), std::string::npos) << wrong.err;
    // Once a leader runs, the table follows generation 2 and the old pair is refused.
    ASSERT_EQ(kubectl({"delete", "lease", "lockstep-operator", "-n", kOperatorNamespace}).exitCode,
              0);
    EXPECT_TRUE(eventually([&] {
      old = kubectl({"create", "-n", ns, "--dry-run=server", "-f", "-"},
                    PodBuilder("stale").hash(hash).yaml());
      return old.exitCode != 0;
    })) << "the old pair is still admitted once the operator leads again";
    EXPECT_NE(old.err.find("RuntimeEnv \"" + ns + "/torch\""), std::string::npos) << old.err;
    return;
  }
  // Until the webhook's cache has seen the edit it answers on the consistent old snapshot;
  // the pod (old hash, old image) must be refused once it has, and for the old status.
  CommandResult r;
  bool refused = eventually([&] {
    r = kubectl({"create", "-n", ns, "--dry-run=server", "-f", "-"},
                PodBuilder("stale").hash(hash).yaml());
    return r.exitCode != 0;
  });
  EXPECT_TRUE(refused) << "admitted on the status of generation 1: " << r.out << r.err;
  EXPECT_NE(r.err.find("is not Ready"), std::string::npos) << r.err;
  r = create(ns, PodBuilder("stale").hash(hash).yaml());
  EXPECT_NE(r.exitCode, 0) << "admitted on the status of generation 1";

  // Hand the lease back: the operator takes it and resolves generation 2.
  ASSERT_EQ(kubectl({"delete", "lease", "lockstep-operator", "-n", kOperatorNamespace}).exitCode,
            0);
  EXPECT_TRUE(eventually([&] {
    json o = kubectlJson({"get", "rte", "torch", "-n", ns});
    return !o.is_discarded() && o["status"].value("observedGeneration", 0) == 2;
  }));
}

TEST_F(AdmissionClusterTest, StoppedWebhookCannotLockSystemNamespaces) {
  std::string ns;
  namespaceWithRuntime("enforce", ns);
  // Self-managed certificates live in a Secret of the operator's namespace.
  json secret = kubectlJson({"get", "secret", "lockstep-webhook-tls", "-n", kOperatorNamespace});
  ASSERT_FALSE(secret.is_discarded());
  EXPECT_EQ(secret["type"], "kubernetes.io/tls");
  for (const char* key : {"ca.crt", "ca.key", "tls.crt", "tls.key"}) {
    EXPECT_TRUE(secret["data"].contains(key)) << key;
  }
  auto caBundle = [] {
    json vwc = kubectlJson({"get", "validatingwebhookconfiguration", kReleaseName});
    return vwc["webhooks"][0]["clientConfig"].value("caBundle", "");
  };
  const std::string bundleBefore = caBundle();
  EXPECT_EQ(bundleBefore, secret["data"]["ca.crt"].get<std::string>());
  op_->stop();
  auto r = create(ns, PodBuilder("blocked").noRuntimeLabel().yaml());
  EXPECT_NE(r.exitCode, 0);
  if (kPolicyMode) {
    // Policy mode: the API server checks pods itself, so they are checked while the operator
    // is down, and refused for what they are, not for an unreachable webhook ...
    EXPECT_NE(r.err.find(kPodDenial), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("requires label lockstep.dev/runtime-env"), std::string::npos) << r.err;
    std::string good =
        kubectlJson({"get", "rte", "torch", "-n", ns})["status"].value("closureHash", "");
    r = create(ns, PodBuilder("admitted-while-down").hash(good).yaml());
    EXPECT_EQ(r.exitCode, 0) << r.err;
  } else {
    // failurePolicy Fail: an ordinary namespace is blocked while the webhook is down ...
    EXPECT_NE(r.err.find("failed calling webhook"), std::string::npos) << r.err;
  }
  // ... but kube-system and the operator's own namespace are never matched.
  for (const std::string& sys : {std::string("kube-system"), std::string(kOperatorNamespace)}) {
    std::string name = uniqueName("sys");
    r = kubectl({"run", name, "-n", sys, "--image=registry.example/pause:3.9", "--restart=Never"});
    EXPECT_EQ(r.exitCode, 0) << sys << ": " << r.err;
    kubectl({"delete", "pod", name, "-n", sys, "--wait=false"});
  }
  // Back up: the operator restarts with the certificate it stored in its Secret.
  ASSERT_EQ(op_->start({"--admission-mode=" + kMode}), "");
  EXPECT_EQ(caBundle(), bundleBefore) << "a restart must not re-issue the CA";
  EXPECT_TRUE(eventually([&] {
    auto again = create(ns, PodBuilder("after").noRuntimeLabel().yaml());
    return again.err.find(kDeniedWords) != std::string::npos;
  }));
}

}  // namespace
}  // namespace lockstep::testing
