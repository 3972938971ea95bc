// A RuntimeEnv's advisories (docs/supply-chain.md "Advisories of a RuntimeEnv"): the
// OSV records of the operator's source (a local export, or an OSV-compatible endpoint's
// last answers) that affect its current revision and every pinned revision, as
// status.advisories; the Event when a revision gains one; the closures an endpoint
// must be asked about; and the compact closure each revision keeps so that a pinned
// revision can be matched after the lock moved on (status.revisions[].packages).
// Pure. Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisories/match.h"
#include "closure/closure.h"
#include "common/status.h"

namespace lockstep::controllers {

inline constexpr size_t kMaxAdvisoryItems = 100;  // the current revision's items
inline constexpr size_t kMaxRevisionItems = 50;   // each entry of revisions[]
inline constexpr const char* kReasonAdvisoryPublished = "AdvisoryPublished";
inline constexpr const char* kReasonAdvisoriesFound = "AdvisoriesFound";

// A revision's stored closure: at most this many bytes (all revisions' together: at most
// kMaxRevisionPackagesTotal, runtimeenv_revisions.h).
inline constexpr size_t kMaxRevisionPackagesBytes = size_t{32} << 10;

// What matching needs of a closure, one line per entry: "<ecosystem> <name> <version>",
// a Nix entry followed by the store path its PyPI name is read from (name_mapping.h).
// nullopt when it would be over kMaxRevisionPackagesBytes, or an entry has a space or a
// newline in a field (no lock format makes one).
std::optional<std::string> encodeAdvisoryPackages(const std::vector<closure::Package>& packages);
// Its inverse; an error names the line.
StatusOr<std::vector<closure::Package>> decodeAdvisoryPackages(const std::string& text);

// An OSV endpoint's last lookup of one closure (advisory_source.h).
struct AdvisoryAnswer {
  std::shared_ptr<const advisories::AdvisoryIndex> index;  // the last good; null: none yet
  std::string checkedAt;  // RFC 3339: when the last good one was read
  int64_t checkedAtUnix = 0;
  int64_t attemptedAtUnix = 0;  // the last attempt, good or not
  std::string error;            // the last attempt's failure; "" when it was good
};

// What the operator's advisory source offers one reconcile (an immutable snapshot).
struct AdvisorySnapshot {
  std::string
      source;  // "/osv/all.zip: 20114 records (20114 files)", "https://osv.example (OSV API)"
  // A local export: one index for every closure.
  std::shared_ptr<const advisories::AdvisoryIndex> index;
  // An endpoint: each closure's last lookup, by closure hash.
  bool endpoint = false;
  std::map<std::string, AdvisoryAnswer> byClosure;
  int64_t refreshSeconds = 1800;  // a good answer older than this is looked up again
  int64_t retrySeconds = 60;      // a failed lookup is tried again after this
};

// A closure the endpoint should be asked about.
struct AdvisoryLookup {
  std::string closureHash;
  std::vector<closure::Package> packages;
};

// One revision to match: the current one (its closure resolved now) and every pinned one.
struct RevisionToMatch {
  int64_t revision = 0;
  std::string closureHash;
  bool current = false;
  bool pinned = false;
  // nullopt: not known (a revision recorded before closures were kept, or one too large).
  std::optional<std::vector<closure::Package>> packages;
};

struct AdvisoryInput {
  const AdvisorySnapshot* source = nullptr;  // not null
  // The current revision's closure, when the lock resolved now; else the last
  // top-level match is kept.
  std::optional<RevisionToMatch> current;
  int64_t currentRevision = 0;          // status.currentRevision (also when not resolved now)
  std::vector<RevisionToMatch> pinned;  // pinned revisions other than the current, ascending
  nlohmann::json previous;              // status.advisories as it was
  int64_t nowUnix = 0;
};

struct AdvisoryPlan {
  nlohmann::json status;  // status.advisories to write
  std::vector<AdvisoryLookup> lookups;
  // Distinct (advisory, package) pairs over the pinned revisions, by severity (the metric).
  nlohmann::json pinnedBySeverity = nlohmann::json::object();
  int64_t requeueAfterSeconds = 0;  // 0: no endpoint answer falls due
  // Events: a revision that gained advisories.
  struct Event {
    std::string type;
    std::string reason;
    std::string message;
  };
  std::vector<Event> events;
};

AdvisoryPlan planAdvisories(const AdvisoryInput& in);

// status.advisories of one match: counts by severity, the highest, the findings
// (highest severity first, at most `maxItems`; `truncated` counts the rest).
nlohmann::json advisoryStatus(const advisories::AdvisoryReport& report, int64_t revision,
                              const std::string& closureHash, const std::string& source,
                              size_t maxItems = kMaxAdvisoryItems);

// The Event when `now` names advisories `previous` did not (for the same closure or
// not): a Warning AdvisoryPublished when the revision is pinned (a release or prod
// runs it), else a Normal AdvisoriesFound. None when nothing is new.
std::optional<AdvisoryPlan::Event> advisoryEvent(const nlohmann::json& previous,
                                                 const nlohmann::json& now, bool pinned);

}  // namespace lockstep::controllers
