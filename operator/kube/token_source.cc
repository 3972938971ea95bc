#include "operator/kube/token_source.h"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

namespace lockstep::kube {
namespace {
constexpr auto kMaxTokenAge = std::chrono::minutes(1);

std::string trimToken(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

TokenSource::TokenSource(const KubeConfig& config, Clock& clock)
    : clock_(clock), staticToken_(config.token), tokenFile_(config.tokenFile) {
  if (!config.username.empty()) basic_ = base64Encode(config.username + ":" + config.password);
}

std::string TokenSource::refreshLocked() {
  struct stat st {};
  bool statOk = ::stat(tokenFile_.c_str(), &st) == 0;
  bool changed =
      statOk && (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec);
  if (read_ && !changed && clock_.now() - readAt_ < kMaxTokenAge) return cached_;
  auto content = readFile(tokenFile_);
  if (content.isOk()) {
    cached_ = trimToken(*content);
    if (statOk) mtime_ = st.st_mtim;
    readAt_ = clock_.now();
    read_ = true;
  } else {
    // Keep the last good token: the file may be mid-rotation.
    spdlog::warn("token file {} cannot be read; keeping the previous token", tokenFile_);
  }
  return cached_;
}

std::string TokenSource::authorizationHeader() {
  if (!staticToken_.empty()) return "Bearer " + staticToken_;
  if (!tokenFile_.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string t = refreshLocked();
    return t.empty() ? "" : "Bearer " + t;
  }
  if (!basic_.empty()) return "Basic " + basic_;
  return "";
}

}  // namespace lockstep::kube
