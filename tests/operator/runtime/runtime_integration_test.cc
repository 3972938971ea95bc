// Leader election between two processes and a Manager-driven controller,
// against the real control plane.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "operator/kube/connect.h"
#include "operator/runtime/manager.h"
#include "tests/support/cluster_env.h"

#ifndef LEASE_CANDIDATE_PATH
#error "LEASE_CANDIDATE_PATH must be defined by the build"
#endif

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;
using lockstep::testing::kubeconfigPath;
using lockstep::testing::uniqueName;
using SteadyTime = std::chrono::steady_clock::time_point;

// A child process whose stdout lines we read without blocking the test forever.
class Candidate {
 public:
  // workMs >= 0: the candidate runs as a small operator (lease_candidate --operator-work-ms).
  Candidate(const std::string& ns, const std::string& lease, const std::string& id,
            long workMs = -1)
      : id_(id) {
    std::string work = std::to_string(workMs);
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      execl(LEASE_CANDIDATE_PATH, LEASE_CANDIDATE_PATH, "--kubeconfig", kubeconfigPath().c_str(),
            "--namespace", ns.c_str(), "--name", lease.c_str(), "--identity", id.c_str(),
            "--lease-ms", "4000", "--renew-ms", "3000", "--retry-ms", "500",
            workMs >= 0 ? "--operator-work-ms" : nullptr, work.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    fd_ = out[0];
  }
  ~Candidate() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  // Reads until `line` appears (a whole line, or a line's start when `prefix`) or the
  // deadline passes.
  bool waitForLine(const std::string& line, SteadyTime deadline, bool prefix = false) {
    const std::string want = prefix ? line : line + "\n";
    while (true) {
      if (buffer_.find(want) != std::string::npos) return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return buffer_.find(want) != std::string::npos;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  bool leading() const { return buffer_.find("LEADING " + id_ + "\n") != std::string::npos; }
  void poke() { (void)waitForLine("\x01", std::chrono::steady_clock::now()); }
  void signal(int sig) { kill(pid_, sig); }
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& id() const { return id_; }
  const std::string& output() const { return buffer_; }
  // Reads whatever is left until the child closes its stdout.
  void readToEnd() {
    char buf[4096];
    ssize_t n = 0;
    while ((n = read(fd_, buf, sizeof buf)) > 0) buffer_.append(buf, static_cast<size_t>(n));
  }

 private:
  std::string id_;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string buffer_;
};

std::shared_ptr<kube::Client> adminClient() {
  auto c = kube::connect(kube::ConnectOptions{kubeconfigPath()});
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return *c;
}

std::string makeNamespace(kube::Client& c) {
  std::string ns = uniqueName("rt-it");
  auto created =
      c.create(kube::resources::kNamespaces, kube::newObject(kube::resources::kNamespaces, "", ns));
  EXPECT_TRUE(created.isOk()) << created.status().toString();
  return ns;
}

std::string holder(kube::Client& c, const std::string& ns, const std::string& lease) {
  auto l = c.get(kube::resources::kLeases, ns, lease);
  if (!l.isOk()) return "<" + l.status().toString() + ">";
  return (*l)["spec"].value("holderIdentity", "");
}

TEST(LeaseIntegrationTest, ExactlyOneLeadsAndTheOtherTakesOverAfterSigkill) {
  auto client = adminClient();
  std::string ns = makeNamespace(*client);
  std::string lease = "lockstep-lease-test";
  Candidate a(ns, lease, "candidate-a");
  Candidate b(ns, lease, "candidate-b");
  auto deadline = std::chrono::steady_clock::now() + 30s;
  // Wait until one leads.
  while (!a.leading() && !b.leading() && std::chrono::steady_clock::now() < deadline) {
    a.waitForLine("LEADING candidate-a", std::chrono::steady_clock::now() + 200ms);
    b.waitForLine("LEADING candidate-b", std::chrono::steady_clock::now() + 200ms);
  }
  ASSERT_NE(a.leading(), b.leading()) << "expected exactly one leader";
  Candidate& leader = a.leading() ? a : b;
  Candidate& follower = a.leading() ? b : a;
  EXPECT_EQ(holder(*client, ns, lease), leader.id());
  // For several lease durations the follower stays a follower.
  EXPECT_FALSE(
      follower.waitForLine("LEADING " + follower.id(), std::chrono::steady_clock::now() + 6s));
  EXPECT_EQ(holder(*client, ns, lease), leader.id());

  // SIGKILL: no release. The follower takes over once the lease record it last saw change
  // has stayed unchanged for leaseDuration on its own clock. Bounds from the configured
  // durations (the Candidate's flags), not from how fast this machine is:
  //  - lower: it saw the leader's last renewal no earlier than that renewal's renewTime, so
  //    it cannot lead before renewTime + leaseDuration (same machine, same wall clock). A
  //    follower acting at the renew deadline (3 s: the split-brain defect) fails this;
  //  - upper: it saw that last change at most one jittered retry (retryPeriod * (1 + 1.2))
  //    after the kill and polls again at most one jittered retry after the lease expired:
  //    leaseDuration + 2 jittered retries from the kill, plus the round trips of those two
  //    polls, each bounded by the candidate's request timeout (5 s).
  const auto leaseDuration = 4000ms, retryPeriod = 500ms;
  const auto maxRetry = retryPeriod * 22 / 10, requestTimeout = 5000ms;
  auto killedAt = std::chrono::steady_clock::now();
  leader.signal(SIGKILL);
  leader.wait();
  auto last = client->get(kube::resources::kLeases, ns, lease);
  ASSERT_TRUE(last.isOk()) << last.status().toString();
  kube::Clock::WallTime lastRenew;
  ASSERT_TRUE(kube::parseTime((*last)["spec"].value("renewTime", ""), &lastRenew));
  ASSERT_TRUE(follower.waitForLine("LEADING " + follower.id(),
                                   killedAt + leaseDuration + 2 * maxRetry + 2 * requestTimeout));
  auto leadingAt = std::chrono::system_clock::now();
  auto sinceRenew = std::chrono::duration_cast<std::chrono::milliseconds>(leadingAt - lastRenew);
  EXPECT_GE(sinceRenew, leaseDuration)
      << "took over " << sinceRenew.count() << " ms after the last renewal, before it expired";
  EXPECT_EQ(holder(*client, ns, lease), follower.id());

  // Graceful shutdown releases the lease (holderIdentity cleared).
  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(), 0);
  EXPECT_EQ(holder(*client, ns, lease), "");
  (void)client->remove(kube::resources::kNamespaces, "", ns);
}

// "WROTE <id> <name> <rv>" lines of one candidate: the resourceVersions of its writes.
std::vector<uint64_t> writesOf(const std::string& output, const std::string& id) {
  std::vector<uint64_t> rvs;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string tag, who, name, rv;
    words >> tag >> who >> name >> rv;
    if (tag == "WROTE" && who == id) rvs.push_back(std::stoull(rv));
  }
  return rvs;
}

// Issue 13 item 11: on SIGTERM the old leader stops its controllers (in-flight reconcile
// finished, backlog dropped) before it releases the Lease, so none of its writes comes
// after the new leader acquired it. resourceVersions of one etcd order the writes: the
// test watches the Lease and takes the resourceVersion of the first event naming the new
// holder.
TEST(LeaseIntegrationTest, NoWriteFromTheOldLeaderAfterTheNewOneAcquiredTheLease) {
  auto client = adminClient();
  std::string ns = makeNamespace(*client);
  std::string lease = "handover";
  const int kBacklog = 20;
  for (int i = 0; i < kBacklog; ++i) {
    auto cm = kube::newObject(kube::resources::kConfigMaps, ns, "backlog-" + std::to_string(i));
    ASSERT_TRUE(client->create(kube::resources::kConfigMaps, cm).isOk());
  }
  auto listed = client->list(kube::resources::kLeases, ns);
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  kube::WatchOptions wo;
  wo.resourceVersion = listed->resourceVersion;
  auto watcher = client->watch(kube::resources::kLeases, ns, wo);
  ASSERT_TRUE(watcher.isOk()) << watcher.status().toString();

  // Each reconcile works 300 ms: the old leader has seconds of backlog when it is stopped.
  Candidate a(ns, lease, "operator-a", 300);
  auto deadline = std::chrono::steady_clock::now() + 60s;
  ASSERT_TRUE(a.waitForLine("WROTE operator-a backlog-", deadline, true)) << a.output();
  Candidate b(ns, lease, "operator-b", 300);
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait(), 0) << "SIGTERM must stop the operator with exit status 0";
  a.readToEnd();
  ASSERT_TRUE(b.waitForLine("WROTE operator-b backlog-", deadline, true)) << b.output();

  uint64_t acquiredAt = 0;
  while (acquiredAt == 0) {
    auto ev = (*watcher)->next();
    ASSERT_TRUE(ev.isOk()) << ev.status().toString();
    ASSERT_TRUE(ev->has_value()) << "lease watch closed before operator-b acquired the lease";
    const auto& obj = (*ev)->object;
    if (obj.value("spec", nlohmann::json::object()).value("holderIdentity", "") == "operator-b")
      acquiredAt = std::stoull(kube::resourceVersion(obj));
  }
  (*watcher)->cancel();
  auto old = writesOf(a.output(), "operator-a");
  ASSERT_FALSE(old.empty());
  // The backlog was dropped, not drained: the old leader wrote fewer than all.
  EXPECT_LT(old.size(), static_cast<size_t>(kBacklog)) << a.output();
  for (uint64_t rv : old) {
    EXPECT_LT(rv, acquiredAt) << "operator-a wrote at resourceVersion " << rv
                              << " after operator-b acquired the lease at " << acquiredAt;
  }
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait(), 0);
  EXPECT_EQ(holder(*client, ns, lease), "") << "a stopped operator must release the lease";
  (void)client->remove(kube::resources::kNamespaces, "", ns);
}

// Copies each ConfigMap's data.input into data.output: a level-based reconciler.
class EchoReconciler : public Reconciler {
 public:
  EchoReconciler(std::shared_ptr<kube::Client> c, kube::Informer& inf, kube::EventSink& ev)
      : client_(std::move(c)), informer_(inf), events_(ev) {}
  Result reconcile(const Request& r) override {
    auto cached = informer_.cache().get(r.ns, r.name);
    if (!cached) return Result::done();  // deleted
    const auto& data = (*cached).value("data", nlohmann::json::object());
    std::string input = data.value("input", "");
    if (data.value("output", "") == input) return Result::done();
    auto patched = client_->mergePatch(kube::resources::kConfigMaps, r.ns, r.name,
                                       {{"data", {{"output", input}}}});
    if (!patched.isOk()) return Result::failed(patched.status());
    (void)events_.normal(*patched, "Echoed", "output set to " + input);
    return Result::done();
  }

 private:
  std::shared_ptr<kube::Client> client_;
  kube::Informer& informer_;
  kube::EventSink& events_;
};

TEST(ManagerIntegrationTest, ReconcilesThroughInformersWithLeaderElectionHealthAndMetrics) {
  auto client = adminClient();
  std::string ns = makeNamespace(*client);
  ManagerOptions mo;
  mo.leaderElection = true;
  mo.leaderElectionConfig.ns = ns;
  mo.leaderElectionConfig.name = "manager-test";
  mo.leaderElectionConfig.leaseDuration = 4s;
  mo.leaderElectionConfig.renewDeadline = 3s;
  mo.leaderElectionConfig.retryPeriod = 500ms;
  mo.healthAddress = "127.0.0.1:0";
  mo.metricsAddress = "127.0.0.1:0";
  Manager mgr(client, mo);
  auto& informer = mgr.informer(kube::resources::kConfigMaps, ns);
  ControllerOptions co;
  co.name = "echo";
  co.workers = 2;
  auto& controller = mgr.addController(
      std::move(co), std::make_shared<EchoReconciler>(client, informer, mgr.events()));
  controller.watch(informer);
  Status result;
  std::thread runner([&] { result = mgr.run(); });

  kube::Object cm = kube::newObject(kube::resources::kConfigMaps, ns, "echo-me");
  cm["data"] = {{"input", "hello"}};
  ASSERT_TRUE(client->create(kube::resources::kConfigMaps, cm).isOk());
  auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string output;
  while (std::chrono::steady_clock::now() < deadline) {
    auto got = client->get(kube::resources::kConfigMaps, ns, "echo-me");
    if (got.isOk()) output = (*got)["data"].value("output", "");
    if (output == "hello") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(output, "hello");
  EXPECT_TRUE(mgr.isLeader());
  EXPECT_FALSE(holder(*client, ns, "manager-test").empty());
  std::string metrics = mgr.metrics().scrape();
  EXPECT_NE(metrics.find("lockstep_reconcile_total{controller=\"echo\",result=\"success\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("lockstep_leader_election_is_leader{lease=\"" + ns + "/manager-test\"} 1"),
            std::string::npos);
  EXPECT_GT(mgr.healthPort(), 0);
  EXPECT_EQ(mgr.health().handle("/readyz").first, 200);

  mgr.stop();
  runner.join();
  EXPECT_TRUE(result.isOk()) << result.toString();
  EXPECT_EQ(holder(*client, ns, "manager-test"), "");  // released on graceful stop
  (void)client->remove(kube::resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace lockstep::runtime
