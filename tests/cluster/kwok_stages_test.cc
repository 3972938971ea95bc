// The test world's pod lifecycle (tests/cluster/kwok/stages.yaml) on the real
// cluster: a serving pod warms up before it is Ready, stays Terminating after
// a delete while still holding its GPUs, an image that cannot be pulled, a
// container that crashes and restarts, a readiness that flaps. Each test
// polls the pod and checks the sequence of states it went through.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

class KwokStagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = uniqueName("stages");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  }
  void TearDown() override { kubectl({"delete", "namespace", ns_, "--wait=false"}); }

  // A pod on `node` with annotations; `serving` adds Lockstep's track label.
  void createPod(const std::string& name, const json& annotations, bool serving = false,
                 const std::string& node = "cpu-0", int gpus = 0) {
    json container = {{"name", "server"}, {"image", "registry.example/model-server:1"}};
    if (gpus > 0) {
      container["resources"] = {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    }
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"annotations", annotations}}},
                {"spec", {{"nodeName", node}, {"containers", json::array({container})}}}};
    if (serving) pod["metadata"]["labels"] = {{"lockstep.dev/track", "stable"}};
    auto r = kubectl({"create", "-n", ns_, "-f", "-"}, pod.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  json pod(const std::string& name) { return kubectlJson({"get", "pod", name, "-n", ns_}); }

  // "phase ready waiting-reason restarts" of a pod ("gone" once deleted).
  std::string state(const std::string& name) {
    json p = pod(name);
    if (p.is_discarded()) return "gone";
    std::string ready = conditionField(p, "Ready") == "True" ? "Ready" : "NotReady";
    json cs = p.value("/status/containerStatuses/0"_json_pointer, json::object());
    std::string waiting = cs.value("/state/waiting/reason"_json_pointer, std::string("-"));
    std::string term = p["metadata"].contains("deletionTimestamp") ? " Terminating" : "";
    return p.value("/status/phase"_json_pointer, std::string("?")) + " " + ready + " " + waiting +
           " " + std::to_string(cs.value("restartCount", 0)) + term;
  }

  // Polls until `done` holds or `timeout`; the distinct states seen, in order.
  std::vector<std::string> watch(const std::string& name,
                                 const std::function<bool(const std::string&)>& done,
                                 std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::vector<std::string> seen;
    eventually(
        [&] {
          std::string s = state(name);
          if (seen.empty() || seen.back() != s) seen.push_back(s);
          return done(s);
        },
        timeout);
    return seen;
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += "[" + s + "] ";
    return out;
  }
  static bool has(const std::vector<std::string>& v, const std::string& s) {
    for (const auto& x : v)
      if (x.find(s) == 0) return true;
    return false;
  }

  std::string ns_;
};

TEST_F(KwokStagesTest, AServingPodRunsThenBecomesReadyAfterItsWarmUp) {
  auto t0 = Clock::now();
  createPod("warm", {{"lockstep.dev/test-warmup", "4s"}}, /*serving=*/true);
  auto seen = watch("warm", [](const std::string& s) { return s.find("Running Ready") == 0; });
  auto took = Clock::now() - t0;
  EXPECT_TRUE(has(seen, "Running NotReady")) << join(seen);
  EXPECT_EQ(seen.back(), "Running Ready - 0") << join(seen);
  EXPECT_GE(took, std::chrono::milliseconds(3500)) << join(seen);

  // The world's default applies to serving pods without the annotation; a
  // pod outside the model server is Ready at once.
  createPod("default", json::object(), /*serving=*/true);
  createPod("other", json::object());
  EXPECT_EQ(state("default").find("Running Ready"), std::string::npos) << state("default");
  EXPECT_TRUE(eventually([&] { return state("other") == "Running Ready - 0"; })) << state("other");
  EXPECT_TRUE(eventually([&] { return state("default") == "Running Ready - 0"; }))
      << state("default");
}

TEST_F(KwokStagesTest, ADeletedServingPodStaysTerminatingAndKeepsItsGpus) {
  createPod("holder", {{"lockstep.dev/test-termination", "8s"}, {"lockstep.dev/test-warmup", "0s"}},
            /*serving=*/true, "gpu-1", 1);
  ASSERT_TRUE(eventually([&] { return state("holder") == "Running Ready - 0"; }))
      << state("holder");
  ASSERT_EQ(kubectl({"delete", "pod", "holder", "-n", ns_, "--wait=false"}).exitCode, 0);
  // Every GPU of gpu-1 but the holder's, taken while it terminates: the
  // scheduler still counts the terminating pod's GPU, so 8 do not fit.
  json filler = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "filler"}}},
                 {"spec",
                  {{"nodeSelector", {{"kubernetes.io/hostname", "gpu-1"}}},
                   {"tolerations", json::array({{{"operator", "Exists"}}})},
                   {"containers", json::array({{{"name", "x"},
                                                {"image", "registry.example/fill:1"},
                                                {"resources",
                                                 {{"requests", {{"nvidia.com/gpu", "8"}}},
                                                  {"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}};
  ASSERT_EQ(kubectl({"create", "-n", ns_, "-f", "-"}, filler.dump()).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    return conditionField(pod("filler"), "PodScheduled", "reason") == "Unschedulable";
  })) << pod("filler").dump();
  EXPECT_NE(state("holder").find("Terminating"), std::string::npos) << state("holder");
  auto seen = watch("holder", [](const std::string& s) { return s == "gone"; });
  EXPECT_EQ(seen.back(), "gone") << join(seen);
  EXPECT_TRUE(eventually([&] { return state("filler").find("Running") == 0; }))
      << "the GPU came free with the pod: " << state("filler");
}

TEST_F(KwokStagesTest, AnImageThatCannotBePulledIsErrImagePullThenImagePullBackOff) {
  createPod("pull", {{"lockstep.dev/test-image-pull", "fail"}}, /*serving=*/true);
  auto seen =
      watch("pull", [](const std::string& s) { return s.find("ImagePullBackOff") != s.npos; });
  EXPECT_TRUE(has(seen, "Pending NotReady ErrImagePull 0")) << join(seen);
  EXPECT_EQ(seen.back(), "Pending NotReady ImagePullBackOff 0") << join(seen);
  json cs = pod("pull").value("/status/containerStatuses/0"_json_pointer, json::object());
  EXPECT_NE(cs.value("/state/waiting/message"_json_pointer, std::string())
                .find("registry.example/model-server:1"),
            std::string::npos)
      << cs.dump();
  // Events of the real kubelet are not simulated; the state is what Lockstep reads.
}

TEST_F(KwokStagesTest, ACrashingContainerRestartsAndIsInCrashLoopBackOff) {
  createPod("crash",
            {{"lockstep.dev/test-warmup", "500ms"},
             // Ready this long before each crash: longer than a poll of `state` (a
             // kubectl) takes on a loaded machine, or the Ready state goes unseen.
             {"lockstep.dev/test-crash-after", "5s"},
             {"lockstep.dev/test-crash-backoff", "1s"}},
            /*serving=*/true);
  auto seen = watch(
      "crash", [](const std::string& s) { return s == "Running NotReady CrashLoopBackOff 2"; });
  EXPECT_TRUE(has(seen, "Running Ready - 0")) << join(seen);
  EXPECT_TRUE(has(seen, "Running NotReady CrashLoopBackOff 1")) << join(seen);
  EXPECT_EQ(seen.back(), "Running NotReady CrashLoopBackOff 2") << join(seen);
  json cs = pod("crash").value("/status/containerStatuses/0"_json_pointer, json::object());
  EXPECT_EQ(cs.value("/lastState/terminated/reason"_json_pointer, std::string()), "Error")
      << cs.dump();
}

TEST_F(KwokStagesTest, AFlappingReadinessGoesFalseAndBack) {
  createPod("flap",
            {{"lockstep.dev/test-warmup", "0s"},
             {"lockstep.dev/test-ready-flap", "2s"},
             {"lockstep.dev/test-ready-flap-down", "1s"}},
            /*serving=*/true);
  std::vector<std::string> reasons;
  int transitions = 0;
  std::string last;
  eventually(
      [&] {
        json p = pod("flap");
        std::string r = conditionField(p, "Ready");
        if (r != last) {
          ++transitions;
          reasons.push_back(r + "/" + conditionField(p, "Ready", "reason"));
          last = r;
        }
        return transitions >= 4;
      },
      std::chrono::seconds(30));
  ASSERT_GE(transitions, 4) << ::testing::PrintToString(reasons);
  bool flapped = false;
  for (const auto& r : reasons) flapped = flapped || r == "False/LockstepTestReadyFlap";
  EXPECT_TRUE(flapped) << ::testing::PrintToString(reasons);
  EXPECT_EQ(state("flap").find("Running"), 0u);
}

}  // namespace
}  // namespace lockstep::testing
