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
constexpr int64_t kForgetAfterSeconds = 86'400;  // a day

std::string stamp(const fs::path& p, std::error_code& ec) {
  auto t = fs::last_write_time(p, ec);
  if (ec) return "?";
  auto size = fs::is_regular_file(p, ec) ? fs::file_size(p, ec) : 0;
  return std::to_string(t.time_since_epoch().count()) + ":" + std::to_string(size);
}

int64_t unixSeconds(kube::Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}
}  // namespace

OsvExportSource::OsvExportSource(std::string path, kube::Clock& clock)
    : path_(std::move(path)), clock_(clock) {}

std::string OsvExportSource::fingerprint() const {
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

Status OsvExportSource::reload(const std::string& print) {
  auto loaded = advisories::loadOsvExport(path_);
  if (!loaded.isOk()) return loaded.status();
  auto next = std::make_shared<AdvisorySnapshot>();
  next->source = path_ + ": " + std::to_string(loaded->index.size()) + " records (" +
                 std::to_string(loaded->files) + " files)";
  next->index = std::make_shared<const advisories::AdvisoryIndex>(std::move(loaded->index));
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::move(next);
  fingerprint_ = print;
  spdlog::info("advisories: loaded {}", snapshot_->source);
  return Status::ok();
}

Status OsvExportSource::load() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    checkedAt_ = clock_.now();
  }
  return reload(fingerprint());
}

std::shared_ptr<const AdvisorySnapshot> OsvExportSource::snapshot() {
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

OsvEndpointSource::OsvEndpointSource(std::unique_ptr<advisories::OsvClient> client,
                                     kube::Clock& clock, OsvEndpointOptions options)
    : client_(std::move(client)), clock_(clock), options_(options) {
  auto first = std::make_shared<AdvisorySnapshot>();
  first->source = client_->url() + " (OSV API)";
  first->endpoint = true;
  first->refreshSeconds = options_.refresh.count();
  first->retrySeconds = options_.retry.count();
  snapshot_ = std::move(first);
  dispatcher_ = std::thread([this] { dispatch(); });
}

OsvEndpointSource::~OsvEndpointSource() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  dispatcher_.join();
}

std::shared_ptr<const AdvisorySnapshot> OsvEndpointSource::snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

void OsvEndpointSource::lookUp(const std::string& ns, const std::string& name,
                               std::vector<AdvisoryLookup>&& lookups) {
  const int64_t now = unixSeconds(clock_.wallNow());
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (AdvisoryLookup& l : lookups) {
      waiting_[l.closureHash].insert(ns + "/" + name);
      askedAt_[l.closureHash] = now;
      if (!pending_.insert(l.closureHash).second) continue;
      queue_.push_back(std::move(l));
      queued = true;
    }
  }
  if (queued) work_.notify_one();
}

void OsvEndpointSource::run(const AdvisoryLookup& lookup) {
  auto found = client_->lookup(advisories::osvQueriesFor(lookup.packages));
  const auto wall = clock_.wallNow();
  const int64_t now = unixSeconds(wall);
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<AdvisorySnapshot>(*snapshot_);
  AdvisoryAnswer& a = next->byClosure[lookup.closureHash];
  a.attemptedAtUnix = now;
  if (found.isOk()) {
    a.index = std::make_shared<const advisories::AdvisoryIndex>(advisories::indexOf(*found));
    a.checkedAt = kube::formatTime(wall, false);
    a.checkedAtUnix = now;
    a.error.clear();
    spdlog::info(
        "advisories: {}: closure {}: {} records for {} package versions ({} requests, {} "
        "from the cache)",
        client_->url(), lookup.closureHash, found->records.size(), found->queries, found->requests,
        found->cached);
  } else {
    a.error = found.status().message();
    spdlog::warn("advisories: closure {}: the OSV endpoint's lookup failed{}: {}",
                 lookup.closureHash, a.index ? "; keeping its last answer" : "", a.error);
  }
  // Answers no RuntimeEnv asked for in a day go.
  for (auto it = next->byClosure.begin(); it != next->byClosure.end();) {
    auto asked = askedAt_.find(it->first);
    if (asked == askedAt_.end() || asked->second + kForgetAfterSeconds < now) {
      if (asked != askedAt_.end()) askedAt_.erase(asked);
      it = next->byClosure.erase(it);
    } else {
      ++it;
    }
  }
  snapshot_ = std::move(next);
}

void OsvEndpointSource::dispatch() {
  while (true) {
    AdvisoryLookup lookup;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      lookup = std::move(queue_.front());
      queue_.pop_front();
    }
    run(lookup);
    std::set<std::string> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.erase(lookup.closureHash);
      wake.swap(waiting_[lookup.closureHash]);
      waiting_.erase(lookup.closureHash);
    }
    if (!wake_) continue;
    for (const std::string& key : wake) {
      const size_t slash = key.find('/');
      wake_(key.substr(0, slash), key.substr(slash + 1));
    }
  }
}

}  // namespace lockstep::controllers
