#include "operator/runtime/leader_election.h"

#include <unistd.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "operator/kube/backoff.h"

namespace lockstep::runtime {
namespace {

int64_t seconds(Clock::Duration d) {
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

Status validate(const LeaderElectionConfig& c) {
  if (c.ns.empty() || c.name.empty())
    return invalidArgument("leader election: lease namespace and name are required");
  if (c.identity.empty()) return invalidArgument("leader election: identity is required");
  if (c.retryPeriod <= Clock::Duration::zero())
    return invalidArgument("leader election: retryPeriod must be > 0");
  if (c.leaseDuration <= c.renewDeadline) {
    return invalidArgument("leader election: leaseDuration must be greater than renewDeadline");
  }
  if (c.renewDeadline <= std::chrono::duration_cast<Clock::Duration>(c.retryPeriod * 1.2)) {
    return invalidArgument("leader election: renewDeadline must be greater than retryPeriod*1.2");
  }
  return Status::ok();
}

std::string defaultIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "_%08x%08x", rd(), rd());
  return std::string(host) + suffix;
}

LeaderElector::LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, Clock& clock)
    : client_(std::move(client)),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      rng_(std::random_device{}()) {}

LeaderElector::~LeaderElector() { stop(); }

std::string LeaderElector::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observedHolder_;
}

bool LeaderElector::sleep(Clock::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = clock_.now() + d;
  while (!stopped_ && !lost_.load() && clock_.now() < deadline)
    clock_.waitUntil(lock, cv_, deadline);
  return !stopped_ && !lost_.load();
}

void LeaderElector::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

void LeaderElector::observeOwnWrite(const kube::Object& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  observedRecord_ = lease["spec"].dump();
  observedHolder_ = config_.identity;
  observedTime_ = clock_.now();
  ownLease_ = lease;
}

bool LeaderElector::tryFastRenew() {
  kube::Object lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Only a leader whose record is its own write and still valid on its clock.
    if (!leading_.load() || ownLease_.is_null() || observedHolder_ != config_.identity ||
        observedTime_ + config_.leaseDuration <= clock_.now())
      return false;
    lease = ownLease_;
  }
  lease["spec"]["renewTime"] = kube::formatTime(clock_.wallNow(), true);
  auto updated = client_->update(kube::resources::kLeases, lease);
  if (!updated.isOk()) {
    spdlog::info("leader election: renewing lease {}/{} from the last written copy: {}; reading it",
                 config_.ns, config_.name, updated.status().toString());
    std::lock_guard<std::mutex> lock(mu_);
    ownLease_ = kube::Object();
    return false;
  }
  observeOwnWrite(*updated);
  return true;
}

bool LeaderElector::tryAcquireOrRenew() {
  if (tryFastRenew()) return true;
  const auto& leases = kube::resources::kLeases;
  std::string now = kube::formatTime(clock_.wallNow(), true);
  auto current = client_->get(leases, config_.ns, config_.name);
  if (!current.isOk()) {
    if (current.status().code() != Code::kNotFound) {
      spdlog::warn("leader election: reading lease {}/{}: {}", config_.ns, config_.name,
                   current.status().toString());
      return false;
    }
    kube::Object lease = kube::newObject(leases, config_.ns, config_.name);
    lease["spec"] = {{"holderIdentity", config_.identity},
                     {"leaseDurationSeconds", seconds(config_.leaseDuration)},
                     {"acquireTime", now},
                     {"renewTime", now},
                     {"leaseTransitions", 0}};
    auto created = client_->create(leases, lease);
    if (!created.isOk()) return false;
    observeOwnWrite(*created);
    return true;
  }
  kube::Object lease = *current;
  nlohmann::json spec = lease.value("spec", nlohmann::json::object());
  std::string holder = spec.value("holderIdentity", "");
  int64_t durationSeconds = spec.value("leaseDurationSeconds", int64_t{0});
  Clock::Duration leaseDuration =
      durationSeconds > 0 ? std::chrono::seconds(durationSeconds) : config_.leaseDuration;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string record = spec.dump();
    if (record != observedRecord_) {
      observedRecord_ = record;
      observedHolder_ = holder;
      observedTime_ = clock_.now();
    }
    if (!holder.empty() && holder != config_.identity &&
        observedTime_ + leaseDuration > clock_.now()) {
      return false;  // held by someone else and not expired
    }
  }
  nlohmann::json next = spec;
  if (holder == config_.identity) {
    if (!next.contains("acquireTime")) next["acquireTime"] = now;
  } else {
    next["acquireTime"] = now;
    next["leaseTransitions"] = spec.value("leaseTransitions", int64_t{0}) + 1;
  }
  next["holderIdentity"] = config_.identity;
  next["leaseDurationSeconds"] = seconds(config_.leaseDuration);
  next["renewTime"] = now;
  lease["spec"] = next;
  // PUT with the read resourceVersion: a concurrent candidate makes this a Conflict.
  auto updated = client_->update(leases, lease);
  if (!updated.isOk()) {
    if (updated.status().code() != Code::kConflict) {
      spdlog::warn("leader election: updating lease: {}", updated.status().toString());
    }
    return false;
  }
  observeOwnWrite(*updated);
  return true;
}

void LeaderElector::lose(const std::string& why) {
  if (leading_.exchange(false)) {
    spdlog::error("leader election: lost lease {}/{}: {}", config_.ns, config_.name, why);
  }
  lost_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  if (!stoppedCalled_.exchange(true) && callbacks_.onStoppedLeading) callbacks_.onStoppedLeading();
}

void LeaderElector::watchdog() {
  // Declares the lease lost when no renewal succeeded for renewDeadline, even while the
  // renewing call itself hangs, so the process stops acting before others may take over.
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_ && !lost_.load()) {
    auto deadline = lastRenew_ + config_.renewDeadline;
    if (clock_.now() >= deadline) {
      lock.unlock();
      lose("no renewal within the renew deadline");
      return;
    }
    clock_.waitUntil(lock, cv_, deadline);
  }
}

void LeaderElector::release() {
  const auto& leases = kube::resources::kLeases;
  auto current = client_->get(leases, config_.ns, config_.name);
  if (!current.isOk()) return;
  kube::Object lease = *current;
  if (lease["spec"].value("holderIdentity", "") != config_.identity) return;
  std::string now = kube::formatTime(clock_.wallNow(), true);
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = now;
  lease["spec"]["acquireTime"] = now;
  auto updated = client_->update(leases, lease);
  if (updated.isOk()) {
    spdlog::info("leader election: released lease {}/{}", config_.ns, config_.name);
  } else {
    spdlog::warn("leader election: releasing lease: {}", updated.status().toString());
  }
}

Status LeaderElector::run() {
  LOCKSTEP_RETURN_IF_ERROR(validate(config_));
  spdlog::info("leader election: {} campaigning for lease {}/{}", config_.identity, config_.ns,
               config_.name);
  // Campaign.
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Status::ok();
    }
    bool acquired = tryAcquireOrRenew();
    std::string holder = leader();
    if (holder != reportedLeader_) {
      reportedLeader_ = holder;
      if (!holder.empty()) {
        spdlog::info("leader election: lease {}/{} is held by {}", config_.ns, config_.name,
                     holder);
        if (callbacks_.onNewLeader) callbacks_.onNewLeader(holder);
      }
    }
    if (acquired) break;
    if (!sleep(kube::jittered(config_.retryPeriod, 1.2, rng_))) return Status::ok();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    lastRenew_ = clock_.now();
  }
  leading_ = true;
  spdlog::info("leader election: {} became leader of {}/{}", config_.identity, config_.ns,
               config_.name);
  std::thread dog([this] { watchdog(); });
  std::thread starter;
  if (callbacks_.onStartedLeading) starter = std::thread(callbacks_.onStartedLeading);
  // Renew.
  while (sleep(config_.retryPeriod)) {
    if (tryAcquireOrRenew()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lost_.load()) lastRenew_ = clock_.now();
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (clock_.now() - lastRenew_ >= config_.renewDeadline) break;
  }
  bool wasLost = lost_.load() || ([&] {
                   std::lock_guard<std::mutex> lock(mu_);
                   return !stopped_;
                 })();
  if (wasLost) {
    lose("renew deadline exceeded");
  } else {
    leading_ = false;
    if (config_.releaseOnStop) release();
    if (!stoppedCalled_.exchange(true) && callbacks_.onStoppedLeading)
      callbacks_.onStoppedLeading();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  {
    // Make sure the watchdog wakes and exits.
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = stopped_ || wasLost;
    cv_.notify_all();
  }
  dog.join();
  if (starter.joinable()) starter.join();
  return wasLost ? unavailable("leader election lost") : Status::ok();
}

}  // namespace lockstep::runtime
