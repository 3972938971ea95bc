#include "tests/support/cluster_env.h"
#include "tests/support/no_skip.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined by the build"
#endif

namespace lockstep::testing {
namespace {

struct State {
  std::string kubeconfig;
  std::string tools;
  std::string dir;
  bool owned = false;  // we started the cluster and must stop it
};

State& state() {
  static State s;
  return s;
}

std::string scriptPath() { return std::string(LOCKSTEP_SOURCE_DIR) + "/tests/cluster/cluster.sh"; }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Starts a private cluster for this binary unless LOCKSTEP_KUBECONFIG names one.
class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    State& s = state();
    // ctest gave this test one cluster of tools/test.sh's resource spec:
    // CTEST_RESOURCE_GROUP_0_CLUSTER=id:N,slots:1 names the Nth of LOCKSTEP_CLUSTER_DIRS.
    const char* group = std::getenv("CTEST_RESOURCE_GROUP_0_CLUSTER");
    const char* dirs = std::getenv("LOCKSTEP_CLUSTER_DIRS");
    if (group != nullptr && dirs != nullptr && *dirs) {
      std::string g = group;
      auto at = g.find("id:");
      size_t id = at == std::string::npos ? 0 : std::stoul(g.substr(at + 3));
      std::istringstream list(dirs);
      std::vector<std::string> all;
      for (std::string d; list >> d;) all.push_back(d);
      if (id >= all.size()) {
        std::cerr << "cluster " << id << " of " << group << " is not in LOCKSTEP_CLUSTER_DIRS ("
                  << dirs << ")" << std::endl;
        std::abort();
      }
      s.dir = all[id];
      s.kubeconfig = s.dir + "/kubeconfig";
      std::ifstream bin(s.dir + "/tools-bin");
      std::getline(bin, s.tools);
      return;
    }
    if (const char* kc = std::getenv("LOCKSTEP_KUBECONFIG"); kc && *kc) {
      s.kubeconfig = kc;
      const char* tb = std::getenv("LOCKSTEP_TOOLS_BIN");
      const char* cd = std::getenv("LOCKSTEP_CLUSTER_DIR");
      s.tools = tb ? tb : "";
      s.dir = cd ? cd : "";
      return;
    }
    s.dir = "/tmp/lockstep-test-" + std::to_string(getpid());
    auto r = run({scriptPath(), "up", "--dir", s.dir});
    if (r.exitCode != 0) {
      std::cerr << "cluster.sh up failed:\n" << r.out << r.err << std::endl;
      std::abort();
    }
    s.owned = true;
    s.kubeconfig = s.dir + "/kubeconfig";
    std::ifstream bin(s.dir + "/tools-bin");
    std::getline(bin, s.tools);
  }
  void TearDown() override {
    State& s = state();
    if (s.owned) (void)run({scriptPath(), "down", "--dir", s.dir});
  }
};

}  // namespace

const std::string& kubeconfigPath() { return state().kubeconfig; }
const std::string& toolsBin() { return state().tools; }
const std::string& clusterDir() { return state().dir; }

ExtraCluster::ExtraCluster(std::string dir) : dir_(std::move(dir)) {
  // The watcher stops it should this test binary die before the destructor runs.
  auto r = run({scriptPath(), "up", "--dir", dir_, "--owner-pid", std::to_string(getpid())});
  if (r.exitCode != 0) {
    error_ = "cluster.sh up --dir " + dir_ + " failed: " + r.out + r.err;
    return;
  }
  kubeconfig_ = dir_ + "/kubeconfig";
  std::ifstream bin(dir_ + "/tools-bin");
  std::getline(bin, tools_);
}

ExtraCluster::~ExtraCluster() { (void)run({scriptPath(), "down", "--dir", dir_}); }

UseCluster::UseCluster(const ExtraCluster& cluster) {
  State& s = state();
  kubeconfig_ = s.kubeconfig;
  tools_ = s.tools;
  dir_ = s.dir;
  s.kubeconfig = cluster.kubeconfig();
  s.tools = cluster.tools();
  s.dir = cluster.dir();
}

UseCluster::~UseCluster() {
  State& s = state();
  s.kubeconfig = kubeconfig_;
  s.tools = tools_;
  s.dir = dir_;
}

CommandResult kubectl(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv{toolsBin().empty() ? "kubectl" : toolsBin() + "/kubectl",
                                "--kubeconfig", kubeconfigPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, input);
}

CommandResult clusterScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv{scriptPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--dir");
  argv.push_back(clusterDir());
  return run(argv);
}

nlohmann::json kubectlJson(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("-o");
  a.push_back("json");
  auto r = kubectl(a);
  if (r.exitCode != 0) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(r.out, nullptr, false);
}

std::string statusField(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return "";
  auto v = status->find(field);
  return v != status->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string conditionField(const nlohmann::json& object, const std::string& type,
                           const char* field) {
  if (!object.is_object()) return "";
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return "";
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return "";
  for (const nlohmann::json& c : *conditions) {
    if (c.is_object() && c.value("type", "") == type) {
      auto v = c.find(field);
      return v != c.end() && v->is_string() ? v->get<std::string>() : "";
    }
  }
  return "";
}

bool eventually(const std::function<bool()>& probe, std::chrono::milliseconds timeout) {
  // A probe that reads a field the object does not have yet (a status before the
  // controller's first write) throws a json type error: that is "not yet", not a failure.
  // The last such error is printed when the wait ends without success.
  std::string shapeError;
  auto attempt = [&] {
    try {
      return probe();
    } catch (const nlohmann::json::exception& e) {
      shapeError = e.what();
      return false;
    }
  };
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (attempt()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  shapeError.clear();
  if (attempt()) return true;
  if (!shapeError.empty()) std::cerr << "eventually: the last probe threw " << shapeError << "\n";
  return false;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int freePort() {
  // Outside the kernel's ephemeral range (32768-60999 by default): a port that
  // bind(0) hands out is the kind every outgoing connection (kubectl, the
  // client) takes next, so it could be taken between this check and the
  // operator's own bind. Here only another test's pick can collide, and the
  // start is spread by pid and time over 16,000 ports.
  constexpr int kFirst = 16000, kCount = 16000;
  static std::atomic<unsigned> next{static_cast<unsigned>(
      getpid() * 7919 + std::chrono::steady_clock::now().time_since_epoch().count())};
  for (int attempt = 0; attempt < 500; ++attempt) {
    int port = kFirst + static_cast<int>(next.fetch_add(104729) % kCount);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (ok) return port;
  }
  return -1;
}

std::string uniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::ostringstream os;
  os << prefix << "-" << getpid() % 10000 << "-" << (now / 1000) % 100000 << "-" << counter++;
  return trim(os.str());
}

}  // namespace lockstep::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // --gtest_list_tests (ctest discovery) must not start a cluster.
  if (!::testing::GTEST_FLAG(list_tests)) {
    ::testing::AddGlobalTestEnvironment(new lockstep::testing::ClusterEnvironment);
  }
  lockstep::testing::installNoSkipPrinter();
  return lockstep::testing::runAllTestsNoSkip();
}
