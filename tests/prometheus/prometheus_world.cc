#include "tests/prometheus/prometheus_world.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined by the build"
#endif
#ifndef LOCKSTEP_TEST_EXPORTER_BIN
#error "LOCKSTEP_TEST_EXPORTER_BIN must be defined by the build"
#endif

namespace lockstep::testing {
namespace {

// Runs argv (no shell); stdout captured, stderr passed through to the test log.
int runCapture(const std::vector<std::string>& argv, std::string& out) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string scriptPath() {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/tests/cluster/prometheus.sh";
}

}  // namespace

bool PrometheusWorld::script(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv{scriptPath(), args.at(0), "--dir", dir_};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  std::string captured;
  int rc = runCapture(argv, captured);
  if (out != nullptr) *out = captured;
  if (rc != 0) std::cerr << "prometheus.sh " << args.at(0) << " exited " << rc << "\n" << captured;
  return rc == 0;
}

std::unique_ptr<PrometheusWorld> PrometheusWorld::start(const Options& options,
                                                        std::string& error) {
  std::unique_ptr<PrometheusWorld> w(new PrometheusWorld);
  char tmpl[] = "/tmp/lockstep-prometheus-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error = "mkdtemp failed";
    return nullptr;
  }
  w->dir_ = tmpl;
  // --owner-pid: the script stops both processes if this test binary crashes.
  std::vector<std::string> args{"up", "--exporter", LOCKSTEP_TEST_EXPORTER_BIN, "--owner-pid",
                                std::to_string(getpid())};
  if (options.tls) args.emplace_back("--tls");
  for (const std::string& target : options.scrapeTargets) {
    args.emplace_back("--target");
    args.push_back(target);
  }
  if (!options.scrapeToken.empty()) {
    const std::string tokenFile = w->dir_ + "-scrape.token";
    std::ofstream(tokenFile) << options.scrapeToken;
    args.emplace_back("--target-token-file");
    args.push_back(tokenFile);
  }
  std::string out;
  if (!w->script(args, &out)) {
    error = "tests/cluster/prometheus.sh up failed (its log is above):\n" + out;
    return nullptr;
  }
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto value = [&](const std::string& key) -> std::string {
      std::string prefix = "export " + key + "=";
      return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "";
    };
    if (auto v = value("LOCKSTEP_PROMETHEUS_URL"); !v.empty()) w->url_ = v;
    if (auto v = value("LOCKSTEP_EXPORTER_URL"); !v.empty()) w->exporterUrl_ = v;
    if (auto v = value("LOCKSTEP_PROMETHEUS_CA"); !v.empty()) w->caFile_ = v;
  }
  if (w->url_.empty() || w->exporterUrl_.empty()) {
    error = "prometheus.sh up printed no URLs:\n" + out;
    return nullptr;
  }
  return w;
}

PrometheusWorld::~PrometheusWorld() {
  if (!dir_.empty()) {
    (void)script({"down"});
    std::remove((dir_ + "-scrape.token").c_str());
  }
}

bool PrometheusWorld::setRate(const std::string& track, double errors, double rps) {
  std::vector<std::string> args{"rate", track, std::to_string(errors)};
  if (rps >= 0) args.push_back(std::to_string(rps));
  return script(args);
}

bool PrometheusWorld::stopPrometheus() { return script({"stop-prometheus"}); }
bool PrometheusWorld::startPrometheus() { return script({"start-prometheus"}); }

}  // namespace lockstep::testing
