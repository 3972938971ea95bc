#include "cmd/lockstep/registry_access.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cmd/lockstep/file_include_reader.h"
#include "operator/registry/connect.h"
#include "operator/registry/credentials.h"

namespace lockstep::cli {
namespace {

constexpr size_t kMaxConfigBytes = size_t{4} << 20;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// The docker config to read: the flag's (must exist), else the first of the
// environment's places that exists ("" none).
StatusOr<std::string> authFilePath(const RegistryAccess& access) {
  if (!access.authFile.empty()) return access.authFile;
  std::vector<std::string> candidates;
  if (std::string f = env("REGISTRY_AUTH_FILE"); !f.empty()) candidates.push_back(f);
  if (std::string d = env("DOCKER_CONFIG"); !d.empty()) candidates.push_back(d + "/config.json");
  if (std::string h = env("HOME"); !h.empty()) candidates.push_back(h + "/.docker/config.json");
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return c;
  }
  return std::string();
}

}  // namespace

StatusOr<std::string> certificates(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".crt") files.push_back(e.path());
  }
  if (ec) return invalidArgument(flag + " " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::string pem;
  for (const auto& f : files) {
    auto text = readFile(f.string(), kMaxConfigBytes);
    if (!text.isOk()) return text.status();
    pem += *text + "\n";
  }
  if (pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    return invalidArgument(flag + " " + dir + ": no *.crt file with a PEM certificate");
  return pem;
}

StatusOr<std::unique_ptr<registry::RegistryClient>> openRegistry(const std::string& host,
                                                                 const RegistryAccess& access) {
  std::optional<registry::Credentials> creds;
  auto path = authFilePath(access);
  if (!path.isOk()) return path.status();
  if (!path->empty()) {
    auto text = readFile(*path, kMaxConfigBytes);
    if (!text.isOk()) return text.status();
    auto found = registry::credentialsForHost(*text, host, *path);
    if (!found.isOk()) return found.status();
    creds = *found;
  }
  registry::ConnectOptions options;
  options.timeout = access.timeout;
  options.maxResponseBytes = access.maxResponseBytes;
  if (!access.certDir.empty()) {
    auto pem = certificates(access.certDir);
    if (!pem.isOk()) return pem.status();
    options.caPem = *pem;
  }
  return registry::connectRegistry(host, creds, options);
}

}  // namespace lockstep::cli
