// The RuntimeEnv controller against the real control plane, run as the
// operator binary with the chart's RBAC.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

#ifndef LOCKSTEP_CLI_BIN
#error "LOCKSTEP_CLI_BIN must name the lockstep CLI"
#endif
#ifndef LOCKSTEP_FIXTURES_DIR
#error "LOCKSTEP_FIXTURES_DIR must name the shared lock fixtures"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kClusterTestImage;
const std::string kUvFixture =
    std::string(LOCKSTEP_FIXTURES_DIR) + "/uv/torch-cu121-yyhhenry-uv-torch-env.uv.lock";

std::string cliHash(const std::string& file) {
  auto r = run({LOCKSTEP_CLI_BIN, "closure-hash", file});
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.substr(out.rfind('\n') + 1);
}

// A pip --require-hashes lock pinning one CUDA runtime release.
std::string pipLock(const std::string& cudaRuntime, const std::string& numpy = "1.26.4") {
  return "numpy==" + numpy + " --hash=sha256:" + std::string(64, 'a') + "\n" +
         "nvidia-cuda-runtime-cu12==" + cudaRuntime + " --hash=sha256:" + std::string(64, 'b') +
         "\n";
}

class RuntimeEnvControllerTest : public OperatorSuite<RuntimeEnvControllerTest> {
 protected:
  void SetUp() override {
    ns_ = uniqueName("rte");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  }
  void TearDown() override {
    printOperatorLogOnFailure();
    kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  CommandResult apply(const std::string& yaml) {
    return kubectl({"apply", "-n", ns_, "-f", "-"}, yaml);
  }

  void applyRte(const std::string& name, const std::string& lockSpec) {
    auto r = apply("apiVersion: lockstep.dev/v1alpha1\nkind: RuntimeEnv\nmetadata: {name: " + name +
                   "}\nspec:\n  image: " + kImage + "\n  lock: " + lockSpec + "\n");
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  json rte(const std::string& name) { return kubectlJson({"get", "rte", name, "-n", ns_}); }

  // Waits until the RuntimeEnv's status describes its current generation.
  json waitObserved(const std::string& name, const std::string& wantReady = "True") {
    json out;
    bool ok = eventually([&] {
      out = rte(name);
      if (out.is_discarded() || !out.contains("status")) return false;
      if (out["status"].value("observedGeneration", -1) != out["metadata"].value("generation", 0))
        return false;
      for (const auto& c : out["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready") return c["status"] == wantReady;
      }
      return false;
    });
    EXPECT_TRUE(ok) << out.dump(2);
    return out;
  }

  std::string ns_;
};

TEST_F(RuntimeEnvControllerTest, ConfigMapLockResolvesToTheCliHash) {
  auto cm = kubectl(
      {"create", "configmap", "torch-lock", "-n", ns_, "--from-file=uv.lock=" + kUvFixture});
  ASSERT_EQ(cm.exitCode, 0) << cm.err;
  applyRte("torch", "{configMapRef: {name: torch-lock, key: uv.lock}}");
  json o = waitObserved("torch");
  std::string expected = cliHash(kUvFixture);
  ASSERT_EQ(expected.rfind("sha256:", 0), 0u) << expected;
  EXPECT_EQ(o["status"]["closureHash"], expected);
  EXPECT_EQ(o["status"]["format"], "uv");
  EXPECT_EQ(o["status"]["packageCount"], 30);
  EXPECT_EQ(o["status"]["cuda"], "12.1");
  EXPECT_EQ(o["status"]["minDriver"], "530.30.02");
  // kubectl wait works: kstatus-compatible Ready condition.
  auto w = kubectl({"wait", "--for=condition=Ready", "rte/torch", "-n", ns_, "--timeout=10s"});
  EXPECT_EQ(w.exitCode, 0) << w.err;
  // An Event records the resolution.
  EXPECT_TRUE(eventually([&] {
    return kubectl({"get", "events", "-n", ns_, "--field-selector", "involvedObject.name=torch"})
               .out.find("Resolved") != std::string::npos;
  }));
}

TEST_F(RuntimeEnvControllerTest, EditingTheConfigMapChangesTheHashAndMarksReleasesStale) {
  ASSERT_EQ(kubectl({"create", "configmap", "lock", "-n", ns_,
                     "--from-literal=requirements.txt=" + pipLock("12.8.90")})
                .exitCode,
            0);
  applyRte("torch", "{configMapRef: {name: lock, key: requirements.txt}}");
  json v1 = waitObserved("torch");
  std::string h1 = v1["status"]["closureHash"];

  auto mr = apply(
      "apiVersion: lockstep.dev/v1alpha1\nkind: ModelRelease\nmetadata: {name: gpt2-v7}\nspec:\n"
      "  model: gpt2\n  package: registry.example/models/gpt2@sha256:" +
      std::string(64, 'c') + "\n  runtimeEnvRef: {name: torch}\n  closureHash: " + h1 +
      "\n  stages:\n  - {name: eval, gate: {template: {spec: {containers: [{name: e}]}}}}\n");
  ASSERT_EQ(mr.exitCode, 0) << mr.err;

  // Edit the lock: numpy moves.
  json cm = kubectlJson({"get", "configmap", "lock", "-n", ns_});
  cm["data"]["requirements.txt"] = pipLock("12.8.90", "2.0.0");
  ASSERT_EQ(kubectl({"apply", "-n", ns_, "-f", "-"}, cm.dump()).exitCode, 0);
  json v2;
  ASSERT_TRUE(eventually([&] {
    v2 = rte("torch");
    return v2["status"].value("closureHash", h1) != h1;
  })) << v2.dump(2);
  std::string h2 = v2["status"]["closureHash"];

  json stale;
  ASSERT_TRUE(eventually([&] {
    stale = kubectlJson({"get", "mr", "gpt2-v7", "-n", ns_});
    for (const auto& c : stale["status"].value("conditions", json::array())) {
      if (c["type"] == "Stale" && c["status"] == "True") return true;
    }
    return false;
  })) << stale.dump(2);
  for (const auto& c : stale["status"]["conditions"]) {
    if (c["type"] != "Stale") continue;
    EXPECT_EQ(c["reason"], "ClosureHashChanged");
    std::string m = c["message"];
    EXPECT_NE(m.find(h1), std::string::npos) << m;
    EXPECT_NE(m.find(h2), std::string::npos) << m;
  }
  // The operator never writes spec: the release still names its validated closure.
  EXPECT_EQ(stale["spec"]["closureHash"], h1);
}

// Issue 12 item 3: admission trusts status.closureHash; a status written by hand is
// re-derived from the spec and lock and restored. The chart's status policy lets no one but
// the operator write it, so the forgery is written as the operator's ServiceAccount (as
// where the policy is off).
TEST_F(RuntimeEnvControllerTest, AHandEditedClosureHashIsRestored) {
  applyRte("torch", "{inline: " + json(pipLock("12.4.127")).dump() + "}");
  std::string hash = waitObserved("torch")["status"].value("closureHash", "");
  ASSERT_EQ(hash.rfind("sha256:", 0), 0u) << hash;
  const std::string forged = "sha256:" + std::string(64, 'f');
  auto p = patchStatusAsOperator("rte", ns_, "torch", {{"closureHash", forged}});
  ASSERT_EQ(p.exitCode, 0) << p.err;
  std::string seen;
  EXPECT_TRUE(eventually([&] {
    json o = rte("torch");
    seen = o.is_discarded() ? "" : o["status"].value("closureHash", "");
    return seen == hash;
  })) << "status.closureHash stayed "
      << seen << ", want " << hash;
}

TEST_F(RuntimeEnvControllerTest, CompatibleNodesFollowTheCudaRelease) {
  applyRte("cu128", "{inline: " + json(pipLock("12.8.90")).dump() + "}");
  applyRte("cu121", "{configMapRef: {name: cu121, key: uv.lock}}");
  ASSERT_EQ(
      kubectl({"create", "configmap", "cu121", "-n", ns_, "--from-file=uv.lock=" + kUvFixture})
          .exitCode,
      0);
  json a = waitObserved("cu128");
  json b = waitObserved("cu121");
  EXPECT_EQ(a["status"]["cuda"], "12.8");
  EXPECT_EQ(a["status"]["compatibleNodes"], 2) << "only the driver-570 nodes run CUDA 12.8";
  EXPECT_EQ(b["status"]["cuda"], "12.1");
  EXPECT_EQ(b["status"]["compatibleNodes"], 3) << "driver 570 and 535 nodes run CUDA 12.1";

  // A node's driver label change is seen: the old node upgrades to 570.
  ASSERT_EQ(
      kubectl({"label", "node", "gpu-old-0", "--overwrite", "nvidia.com/cuda.driver.major=570"})
          .exitCode,
      0);
  bool seen = eventually([&] { return rte("cu128")["status"].value("compatibleNodes", 0) == 3; });
  kubectl({"label", "node", "gpu-old-0", "--overwrite", "nvidia.com/cuda.driver.major=535"});
  EXPECT_TRUE(seen);
  EXPECT_TRUE(eventually([&] { return rte("cu128")["status"].value("compatibleNodes", 0) == 2; }));
}

TEST_F(RuntimeEnvControllerTest, PrinterColumns) {
  ASSERT_EQ(kubectl({"create", "configmap", "l", "-n", ns_, "--from-file=uv.lock=" + kUvFixture})
                .exitCode,
            0);
  applyRte("torch", "{configMapRef: {name: l, key: uv.lock}}");
  json o = waitObserved("torch");
  auto r = kubectl({"get", "rte", "-n", ns_});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string header = r.out.substr(0, r.out.find('\n'));
  for (const char* col : {"NAME", "HASH", "PACKAGES", "CUDA", "NODES", "READY", "AGE"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col << " missing in: " << header;
  }
  std::string shortHash = o["status"]["closureHash"].get<std::string>().substr(7, 12);
  EXPECT_NE(r.out.find(shortHash), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12.1"), std::string::npos) << r.out;
  // The category lists both kinds.
  EXPECT_EQ(kubectl({"get", "lockstep", "-n", ns_}).exitCode, 0);
}

TEST_F(RuntimeEnvControllerTest, BadLocksGiveConditionsNotCrashes) {
  applyRte("unhashed", "{inline: \"numpy==1.26.4\\n\"}");
  applyRte("garbage", "{inline: \"version = 1\\n[[package]\\nname = \"}");
  applyRte("missing", "{configMapRef: {name: nope, key: uv.lock}}");
  struct Want {
    const char* name;
    const char* reason;
    const char* inMessage;
  };
  for (const Want& w :
       {Want{"unhashed", "UnhashedPackage", "numpy"}, Want{"garbage", "LockParseError", ":"},
        Want{"missing", "LockNotFound", "nope"}}) {
    json o = waitObserved(w.name, "False");
    for (const auto& c : o["status"]["conditions"]) {
      if (c["type"] != "Ready") continue;
      EXPECT_EQ(c["reason"], w.reason) << w.name;
      EXPECT_NE(c["message"].get<std::string>().find(w.inMessage), std::string::npos)
          << c["message"];
    }
  }
  // Creating the missing ConfigMap later resolves the RuntimeEnv.
  ASSERT_EQ(kubectl({"create", "configmap", "nope", "-n", ns_, "--from-file=uv.lock=" + kUvFixture})
                .exitCode,
            0);
  waitObserved("missing", "True");
}

TEST_F(RuntimeEnvControllerTest, SchemaAndCelRejectInvalidObjectsReadably) {
  auto r = apply(
      "apiVersion: lockstep.dev/v1alpha1\nkind: RuntimeEnv\nmetadata: {name: bad}\nspec:\n"
      "  image: registry.example/runtimes/torch:2.5\n  lock: {inline: x, configMapRef: {name: a, "
      "key: b}}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.image must be pinned by digest"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exactly one of spec.lock.inline or spec.lock.configMapRef"),
            std::string::npos)
      << r.err;

  r = apply(
      "apiVersion: lockstep.dev/v1alpha1\nkind: ModelRelease\nmetadata: {name: bad}\nspec:\n"
      "  model: gpt2\n  package: registry.example/models/gpt2:latest\n  runtimeEnvRef: {name: "
      "torch}\n"
      "  closureHash: sha256:abc\n  stages:\n  - {name: prod, serving: {template: {}}}\n"
      "  - {name: eval, gate: {template: {}}}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.package must be an OCI reference by digest"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("spec.closureHash must be sha256:<64 lowercase hex>"), std::string::npos)
      << r.err;
  // The CRD's wording, not the webhook's ("... must be the last stage (gates come before
  // prod)"): with the CEL rule gone the webhook would still refuse, and this must fail.
  EXPECT_NE(r.err.find("at most one serving stage, and it must be the last stage"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("admission webhook"), std::string::npos)
      << "refused by the webhook, not by the CRD's rules: " << r.err;

  // Immutability (CEL transition rules): the package cannot be re-pointed.
  const std::string hash = "sha256:" + std::string(64, 'd');
  std::string good =
      "apiVersion: lockstep.dev/v1alpha1\nkind: ModelRelease\nmetadata: {name: ok}\nspec:\n"
      "  model: gpt2\n  package: registry.example/models/gpt2@sha256:" +
      std::string(64, 'e') + "\n  runtimeEnvRef: {name: later}\n  closureHash: " + hash +
      "\n  stages:\n  - {name: eval, gate: {template: {}}}\n";
  r = apply(good);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string moved = good;
  moved.replace(moved.find(std::string(64, 'e')), 64, std::string(64, 'f'));
  r = apply(moved);
  EXPECT_NE(r.exitCode, 0);
  // Again the CEL transition rule's message; the webhook's would be "field is immutable".
  EXPECT_NE(r.err.find("spec.package is immutable; create a new ModelRelease for a new checkpoint"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("admission webhook"), std::string::npos)
      << "refused by the webhook, not by the CRD's rules: " << r.err;
}

}  // namespace
}  // namespace lockstep::testing
