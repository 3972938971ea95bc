#include "controllers/fleet/fleet_referrers.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "evidence/bundle.h"
#include "evidence/statement.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

// The predicate type the payload claims, before any check: only to tell a
// statement the hub should have counted from one it has no business with.
std::string claimedPredicate(const std::string& bundleText) {
  auto bundle = evidence::parseBundle(bundleText, "");
  if (!bundle.isOk()) return "";
  json s = json::parse(bundle->envelope.payload, nullptr, /*allow_exceptions=*/false);
  if (!s.is_object()) return "";
  auto it = s.find("predicateType");
  return it != s.end() && it->is_string() ? it->get<std::string>() : "";
}

bool isFleetPredicate(const std::string& type) {
  return type == evidence::kProdRecordPredicate || type == evidence::kWavePermitPredicate ||
         type == evidence::kFleetAbortPredicate;
}

}  // namespace

FleetReferrers readFleetReferrers(const std::vector<evidence::ReferrerBundle>& referrers,
                                  const FleetKeys& keys, const std::string& packageDigest) {
  FleetReferrers out;
  for (const evidence::ReferrerBundle& r : referrers) {
    if (!r.error.empty()) {
      out.ignored.push_back({r.manifestDigest, "", "could not be read: " + r.error});
      continue;
    }
    const std::string claimed = claimedPredicate(r.bundle);
    if (!isFleetPredicate(claimed)) continue;
    const std::string origin = "referrer " + r.manifestDigest;
    evidence::Expectation want;
    want.subjectDigest = packageDigest;
    want.predicateType = claimed;
    want.requirePassed = false;  // a RolledBack record counts as much as a Promoted one
    const bool prod = claimed == evidence::kProdRecordPredicate;
    want.stage = prod ? "prod" : evidence::kFleetStage;
    auto v = evidence::verifyBundle(r.bundle, prod ? keys.prod : keys.fleet, want, origin);
    if (!v.isOk()) {
      out.ignored.push_back({r.manifestDigest, claimed, v.status().message()});
      continue;
    }
    Status parsed;
    if (prod) {
      auto record = evidence::parseProdRecord(v->statement);
      if (record.isOk()) out.records.push_back(std::move(*record));
      parsed = record.status();
    } else if (claimed == evidence::kWavePermitPredicate) {
      auto permit = evidence::parseWavePermit(v->statement);
      if (permit.isOk() &&
          std::find(out.permits.begin(), out.permits.end(), *permit) == out.permits.end())
        out.permits.push_back(std::move(*permit));
      parsed = permit.status();
    } else {
      auto abort = evidence::parseFleetAbort(v->statement);
      if (abort.isOk()) out.aborts.push_back(std::move(*abort));
      parsed = abort.status();
    }
    if (!parsed.isOk())
      out.ignored.push_back({r.manifestDigest, claimed, origin + ": " + parsed.message()});
  }
  return out;
}

}  // namespace lockstep::controllers
