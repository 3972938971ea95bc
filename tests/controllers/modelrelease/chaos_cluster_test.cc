// The chaos run (tools/chaos.sh; not in CI): for LOCKSTEP_CHAOS_SECONDS
// (default 300), releases of LOCKSTEP_CHAOS_MODELS models (default 3) are
// applied one after another per model, some healthy (promoted), some failing
// their analysis (rolled back), some aborted; meanwhile the operator is
// SIGKILLed and restarted, kube-apiserver is restarted and the leader moves to
// a second replica, at random. An invariant monitor per model runs the whole
// time; the run ends once every release is in a terminal phase and prints its
// record.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Short enough that a killed leader's successor takes over within seconds, with
// room for renewals on a busy machine (a 4 s renew deadline was missed there).
const std::vector<std::string>& fastLease() {
  static const std::vector<std::string> args = {"--leader-elect-lease-duration=12s",
                                                "--leader-elect-renew-deadline=9s",
                                                "--leader-elect-retry-period=1s"};
  return args;
}

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v ? std::atoi(v) : fallback;
}

bool terminal(const std::string& phase) {
  return phase == "Promoted" || phase == "RolledBack" || phase == "Superseded" || phase == "Failed";
}

TEST(ChaosRun, ReleasesUnderFaultsKeepTheInvariants) {
  const int seconds = envInt("LOCKSTEP_CHAOS_SECONDS", 300);
  const int models = envInt("LOCKSTEP_CHAOS_MODELS", 3);
  ASSERT_EQ(ReleaseWorld::startOperator(fastLease()), "");
  // Stops the operator however the body ends (a fatal failure, an exception).
  struct StopOperator {
    ~StopOperator() { ReleaseWorld::stopOperator(); }
  } stopOperator;
  ReleaseWorld w;
  ASSERT_EQ(w.setUp({.nsPrefix = "chaos", .prometheus = true}), "");
  std::map<std::string, std::unique_ptr<InvariantMonitor>> monitors;
  for (int m = 0; m < models; ++m) {
    MonitorOptions o;
    o.ns = w.ns();
    o.model = "m" + std::to_string(m);
    o.runtimeImage = kTestImage;
    std::string error;
    monitors[o.model] = InvariantMonitor::start(kubeconfigPath(), o, error);
    ASSERT_NE(monitors[o.model], nullptr) << error;
  }
  std::mt19937 rng(envInt("LOCKSTEP_CHAOS_SEED", static_cast<int>(getpid())));
  std::map<std::string, std::string> latest;  // model -> its newest release
  std::map<std::string, int> outcomes;
  int releases = 0, kills = 0, apiRestarts = 0, leaderMoves = 0;
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  auto nextFault = Clock::now() + std::chrono::seconds(20);
  // "" while the API server restarts (kubectl fails) or the status is not written yet.
  auto phaseOf = [&](const std::string& name) {
    json mr = w.get("mr", name);
    return mr.is_object() ? mr.value("/status/phase"_json_pointer, std::string()) : "";
  };
  while (Clock::now() < deadline) {
    for (int m = 0; m < models; ++m) {
      std::string model = "m" + std::to_string(m);
      if (latest.count(model) != 0 && !terminal(phaseOf(latest[model]))) continue;
      std::string name = model + "-r" + std::to_string(releases++);
      int kind = static_cast<int>(rng() % 3);  // 0 healthy, 1 failing, 2 aborted
      json steps = kind == 2 ? json::array({canaryStep(50, "Indefinite")})
                             : json::array({w.analysedStep(50, 2, w.releaseErrorRatio(name)),
                                            canaryStep(100, "2s")});
      if (kind == 1) w.prom().setRate(name, 0.5);
      // The webhook and the API server come and go: retry the create.
      CommandResult r;
      EXPECT_TRUE(eventually(
          [&] {
            r = w.create(w.release(name, testPackage(static_cast<char>('a' + releases % 6)))
                             .model(model)
                             .withProdStage(prodStage(steps).replicas(2)));
            return r.exitCode == 0 || r.err.find("AlreadyExists") != std::string::npos;
          },
          std::chrono::seconds(60)))
          << r.err;
      latest[model] = name;
      std::cout << "chaos: " << name << " ("
                << (kind == 0   ? "healthy"
                    : kind == 1 ? "failing"
                                : "aborted")
                << ")" << std::endl;
      if (kind == 2) {
        // Aborted once it pauses (or later, if a fault is in the way).
        eventually(
            [&] { return conditionField(w.get("mr", name), "Ready", "reason") == "CanaryPaused"; },
            std::chrono::seconds(60));
        // The webhook accepts only the caller's own name, and a fault (an API
        // server restart) can fail either call: retried until the annotation is in.
        bool annotated = eventually(
            [&] {
              auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
              if (who.exitCode != 0 || who.out.empty()) return false;
              return kubectl({"annotate", "--overwrite", "mr", name, "-n", w.ns(),
                              "lockstep.dev/abort=" + who.out})
                         .exitCode == 0;
            },
            std::chrono::seconds(60));
        EXPECT_TRUE(annotated) << "could not abort " << name;
      }
    }
    if (Clock::now() >= nextFault) {
      int fault = static_cast<int>(rng() % 3);
      if (fault == 0) {
        ReleaseWorld::op().stop(SIGKILL);
        EXPECT_EQ(ReleaseWorld::op().start(fastLease()), "");
        ++kills;
        std::cout << "chaos: operator SIGKILLed and restarted" << std::endl;
      } else if (fault == 1) {
        auto r = clusterScript({"restart-apiserver"});
        EXPECT_EQ(r.exitCode, 0) << r.err;
        ++apiRestarts;
        std::cout << "chaos: kube-apiserver restarted" << std::endl;
      } else {
        // A second replica takes the lease once the first is killed; then the
        // first comes back as the standby and the second goes.
        OperatorProcess b;
        std::vector<std::string> args = fastLease();
        args.push_back("--webhook-port=" + std::to_string(freePort()));
        EXPECT_EQ(b.start(args), "");
        ReleaseWorld::op().stop(SIGKILL);
        std::this_thread::sleep_for(std::chrono::seconds(14));
        EXPECT_EQ(ReleaseWorld::op().start(fastLease()), "");
        b.stop(SIGKILL);
        ++leaderMoves;
        std::cout << "chaos: leader moved" << std::endl;
      }
      nextFault = Clock::now() + std::chrono::seconds(15 + rng() % 30);
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  // Every release ends in a terminal phase.
  json list;
  EXPECT_TRUE(eventually(
      [&] {
        list = kubectlJson({"get", "mr", "-n", w.ns()});
        if (!list.is_object()) return false;
        for (const json& mr : list["items"])
          if (!terminal(mr.value("/status/phase"_json_pointer, std::string()))) return false;
        return true;
      },
      std::chrono::seconds(300)))
      << list.dump(2);
  for (const json& mr : list["items"]) {
    std::string phase = mr.value("/status/phase"_json_pointer, std::string("?"));
    outcomes[phase]++;
    std::cout << "chaos: " << mr.value("/metadata/name"_json_pointer, std::string()) << " " << phase
              << " " << conditionField(mr, "Stalled", "reason") << std::endl;
  }
  int violations = 0, known = 0;
  for (auto& [model, monitor] : monitors) {
    violations += static_cast<int>(monitor->violations().size());
    if (!monitor->knownFindings().empty()) ++known;
    EXPECT_EQ(monitor->report(), "") << model;
    std::cerr << monitor->knownFindings();
  }
  std::cout << "chaos record: " << seconds << " s, " << models << " models, " << releases
            << " releases " << json(outcomes).dump() << ", " << kills << " operator kills, "
            << apiRestarts << " kube-apiserver restarts, " << leaderMoves << " leader moves, "
            << violations << " invariant violations, known findings on " << known << " model(s)"
            << std::endl;
  monitors.clear();
  w.tearDown(HasFailure());
}

}  // namespace
}  // namespace lockstep::testing
