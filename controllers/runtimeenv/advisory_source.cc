#include "controllers/runtimeenv/advisory_source.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "advisories/osv_export.h"

namespace lockstep::controllers {

namespace fs = std::filesystem;

namespace {
constexpr auto kCheckEvery = std::chrono::minutes(1);

std::string stamp(const fs::path& p, std::error_code& ec) {
  auto t = fs::last_write_time(p, ec);
  if (ec) return "?";
  auto size = fs::is_regular_file(p, ec) ? fs::file_size(p, ec) : 0;
  return std::to_string(t.time_since_epoch().count()) + ":" + std::to_string(size);
}
}  // namespace

AdvisorySource::AdvisorySource(std::string path, kube::Clock& clock)
    : path_(std::move(path)), clock_(clock) {}

std::string AdvisorySource::fingerprint() const {
  std::error_code ec;
  std::string out = stamp(path_, ec);
  if (fs::is_directory(path_, ec)) {
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      out += "|" + it->path().string() + "=" + stamp(it->path(), ec);
    }
  }
  return out;
}

Status AdvisorySource::reload(const std::string& print) {
  auto loaded = advisories::loadOsvExport(path_);
  if (!loaded.isOk()) return loaded.status();
  const size_t records = loaded->index.size();
  const size_t files = loaded->files;
  auto index = std::make_shared<const advisories::AdvisoryIndex>(std::move(loaded->index));
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_.index = std::move(index);
  snapshot_.description =
      path_ + ": " + std::to_string(records) + " records (" + std::to_string(files) + " files)";
  fingerprint_ = print;
  spdlog::info("advisories: loaded {}", snapshot_.description);
  return Status::ok();
}

Status AdvisorySource::load() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    checkedAt_ = clock_.now();
  }
  return reload(fingerprint());
}

AdvisorySource::Snapshot AdvisorySource::current() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (clock_.now() - checkedAt_ < kCheckEvery) return snapshot_;
    checkedAt_ = clock_.now();
  }
  const std::string print = fingerprint();
  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = print != fingerprint_;
  }
  if (changed) {
    if (Status s = reload(print); !s.isOk()) {
      spdlog::warn("advisories: {} changed but does not load; keeping the last good export: {}",
                   path_, s.toString());
      std::lock_guard<std::mutex> lock(mu_);
      fingerprint_ = print;  // tried once; a later change is tried again
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

}  // namespace lockstep::controllers
