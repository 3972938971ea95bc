#include "tests/support/registry_world.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined by the build"
#endif

namespace lockstep::testing {
namespace {

// Runs tests/cluster/registry.sh VERB --dir DIR [ARGS] (no shell); stdout captured.
int runScript(const std::vector<std::string>& args, std::string& out) {
  std::vector<std::string> argv{std::string(LOCKSTEP_SOURCE_DIR) + "/tests/cluster/registry.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> cargs;
    cargs.reserve(argv.size() + 1);
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
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

}  // namespace

std::unique_ptr<RegistryWorld> RegistryWorld::start(std::string& error) {
  std::unique_ptr<RegistryWorld> w(new RegistryWorld);
  char tmpl[] = "/tmp/lockstep-registry-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error = "mkdtemp failed";
    return nullptr;
  }
  w->dir_ = tmpl;
  std::string out;
  int rc = runScript({"up", "--dir", w->dir_, "--owner-pid", std::to_string(getpid())}, out);
  if (rc != 0) {
    error = "tests/cluster/registry.sh up exited " + std::to_string(rc) + ":\n" + out;
    return nullptr;
  }
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto value = [&](const std::string& key) -> std::string {
      std::string prefix = "export " + key + "=";
      return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "";
    };
    if (auto v = value("LOCKSTEP_REGISTRY_HOST"); !v.empty()) w->host_ = v;
    if (auto v = value("LOCKSTEP_REGISTRY_CA"); !v.empty()) w->caFile_ = v;
    if (auto v = value("LOCKSTEP_REGISTRY_USERNAME"); !v.empty()) w->username_ = v;
    if (auto v = value("LOCKSTEP_REGISTRY_PASSWORD"); !v.empty()) w->password_ = v;
  }
  if (w->host_.empty() || w->caFile_.empty() || w->password_.empty()) {
    error = "registry.sh up printed no host, CA or password:\n" + out;
    return nullptr;
  }
  return w;
}

RegistryWorld::~RegistryWorld() {
  if (dir_.empty()) return;
  std::string out;
  if (runScript({"down", "--dir", dir_}, out) != 0) std::cerr << "registry.sh down: " << out;
}

std::string RegistryWorld::caPem() const {
  std::ifstream in(caFile_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

StatusOr<std::string> pushTestImage(registry::RegistryClient& client, const std::string& repository,
                                    const std::string& salt, const std::string& mediaType) {
  const bool oci = mediaType == registry::kOciManifest;
  const std::string config =
      nlohmann::json{{"architecture", "amd64"}, {"os", "linux"}, {"lockstep-test", salt}}.dump();
  const std::string layer = "checkpoint bytes of " + salt + "\n";
  auto configDigest = client.pushBlob(repository, config);
  if (!configDigest.isOk()) return configDigest.status();
  auto layerDigest = client.pushBlob(repository, layer);
  if (!layerDigest.isOk()) return layerDigest.status();
  nlohmann::json manifest = {
      {"schemaVersion", 2},
      {"mediaType", mediaType},
      {"config",
       {{"mediaType", oci ? "application/vnd.oci.image.config.v1+json"
                          : "application/vnd.docker.container.image.v1+json"},
        {"digest", *configDigest},
        {"size", config.size()}}},
      {"layers",
       {{{"mediaType", oci ? "application/vnd.oci.image.layer.v1.tar"
                           : "application/vnd.docker.image.rootfs.diff.tar.gzip"},
         {"digest", *layerDigest},
         {"size", layer.size()}}}}};
  registry::Manifest m;
  m.mediaType = mediaType;
  // Indented on purpose: the registry must keep these exact bytes, not re-serialise them.
  m.bytes = manifest.dump(2);
  m.digest = registry::sha256Digest(m.bytes);
  Status put = client.putManifest(repository, m.digest, m);
  if (!put.isOk()) return put;
  return m.digest;
}

}  // namespace lockstep::testing
