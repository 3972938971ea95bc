#include "tests/support/registry_world.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/registry/connect.h"
#include "tests/support/process.h"

namespace lockstep::testing {
namespace {

// tests/cluster/registry.sh VERB --dir DIR [ARGS], through run().
CommandResult runScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv{sourcePath("tests/cluster/registry.sh")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

}  // namespace

std::unique_ptr<RegistryWorld> RegistryWorld::start(std::string& error, const std::string& kind) {
  std::unique_ptr<RegistryWorld> w(new RegistryWorld);
  char tmpl[] = "/tmp/lockstep-registry-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error = "mkdtemp failed";
    return nullptr;
  }
  w->dir_ = tmpl;
  CommandResult r =
      runScript({"up", "--dir", w->dir_, "--owner-pid", std::to_string(getpid()), "--kind", kind});
  if (r.exitCode != 0) {
    error =
        "tests/cluster/registry.sh up exited " + std::to_string(r.exitCode) + ":\n" + r.out + r.err;
    return nullptr;
  }
  auto env = exportsOf(r.out);
  w->host_ = env["LOCKSTEP_REGISTRY_HOST"];
  w->caFile_ = env["LOCKSTEP_REGISTRY_CA"];
  w->username_ = env["LOCKSTEP_REGISTRY_USERNAME"];
  w->password_ = env["LOCKSTEP_REGISTRY_PASSWORD"];
  if (w->host_.empty() || w->caFile_.empty() || w->password_.empty()) {
    error = "registry.sh up printed no host, CA or password:\n" + r.out;
    return nullptr;
  }
  return w;
}

Status RegistryWorld::stop() {
  CommandResult r = runScript({"stop", "--dir", dir_});
  if (r.exitCode != 0) return internalError("registry.sh stop: " + r.out + r.err);
  return Status::ok();
}

Status RegistryWorld::startAgain() {
  CommandResult r = runScript({"start", "--dir", dir_});
  if (r.exitCode != 0) return internalError("registry.sh start: " + r.out + r.err);
  return Status::ok();
}

RegistryWorld::~RegistryWorld() {
  if (dir_.empty()) return;
  CommandResult r = runScript({"down", "--dir", dir_});
  if (r.exitCode != 0) std::cerr << "registry.sh down: " << r.out << r.err;
}

StatusOr<std::unique_ptr<registry::RegistryClient>> RegistryWorld::client() const {
  registry::ConnectOptions options;
  options.caPem = caPem();
  return registry::connectRegistry(host_, registry::Credentials{username_, password_, ""}, options);
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
