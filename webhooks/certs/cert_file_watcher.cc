#include "webhooks/certs/cert_file_watcher.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "webhooks/certs/x509.h"

namespace lockstep::webhooks {
namespace {

std::optional<std::string> fileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // follows the Secret's symlinks
  return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_ino);
}

StatusOr<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sha256(const std::string& a, const std::string& b) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const char sep = '\0';
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, a.data(), a.size());
  EVP_DigestUpdate(ctx, &sep, 1);
  EVP_DigestUpdate(ctx, b.data(), b.size());
  EVP_DigestFinal_ex(ctx, out, &len);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

StatusOr<bool> CertFileWatcher::poll(TimePoint now) {
  if (lastCheck_ && now - *lastCheck_ < interval_) return false;
  lastCheck_ = now;
  auto certStamp = fileStamp(certPath_);
  auto keyStamp = fileStamp(keyPath_);
  if (!certStamp || !keyStamp)
    return notFound("certificate files " + certPath_ + ", " + keyPath_ + " not found");
  std::string fingerprint = *certStamp + "|" + *keyStamp;
  if (fingerprint == lastFingerprint_) return false;
  StatusOr<bool> r = reload();
  // Remember the files only once they loaded: a mismatched pair is retried.
  if (r.isOk()) lastFingerprint_ = fingerprint;
  return r;
}

StatusOr<bool> CertFileWatcher::reload() {
  StatusOr<std::string> cert = readFile(certPath_);
  if (!cert.isOk()) return cert.status();
  StatusOr<std::string> key = readFile(keyPath_);
  if (!key.isOk()) return key.status();
  std::string hash = sha256(*cert, *key);
  if (hash == lastHash_) return false;
  LOCKSTEP_RETURN_IF_ERROR(checkKeyMatchesCert(*cert, *key).withContext(certPath_));
  LOCKSTEP_RETURN_IF_ERROR(sink_.setCertificate({*cert, *key}));
  lastHash_ = hash;
  return true;
}

}  // namespace lockstep::webhooks
