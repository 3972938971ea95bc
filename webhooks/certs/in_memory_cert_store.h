// CertStore kept in process memory (dev server, tests; the operator uses a
// Secret), with optimistic concurrency like a Secret's resourceVersion, and
// CaBundleFile, a CaBundlePatcher that writes the CA bundle to a file (for
// local runs that register the webhook by URL with that CA).
// Thread-safety: InMemoryCertStore is thread-safe; CaBundleFile is not.
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

#include "webhooks/certs/self_managed.h"

namespace lockstep::webhooks {

class InMemoryCertStore final : public CertStore {
 public:
  StatusOr<std::optional<CertBundle>> load() override {
    std::lock_guard<std::mutex> lock(mu_);
    loadedVersion_ = version_;
    return bundle_;
  }
  Status save(const CertBundle& bundle) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (loadedVersion_ != version_) return Status(Code::kConflict, "cert store changed since load");
    bundle_ = bundle;
    loadedVersion_ = ++version_;
    return Status::ok();
  }
  // Simulates another writer (another replica) replacing the bundle.
  void externalWrite(const CertBundle& bundle) {
    std::lock_guard<std::mutex> lock(mu_);
    bundle_ = bundle;
    ++version_;
  }
  std::optional<CertBundle> current() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bundle_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<CertBundle> bundle_;
  long version_ = 0;
  long loadedVersion_ = -1;
};

class CaBundleFile final : public CaBundlePatcher {
 public:
  explicit CaBundleFile(std::string path) : path_(std::move(path)) {}
  StatusOr<bool> patchCaBundle(const std::string& pem) override {
    // The file is replaced by rename: never do that to a device, a directory or
    // a link (renaming over /dev/null as root would replace the device).
    struct stat st {};
    if (lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return invalidArgument("CA bundle path " + path_ + " exists and is not a regular file");
    }
    {
      std::ifstream in(path_, std::ios::binary);
      std::string current((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in.is_open() && current == pem) return false;  // checked every round: write only changes
    }
    std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << pem;
      if (!out) return unavailable("writing " + tmp);
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) return unavailable("renaming " + tmp);
    return true;
  }

 private:
  std::string path_;
};

}  // namespace lockstep::webhooks
