// The per-model anchor ConfigMap `lockstep-model-<model>` of earlier versions
// (docs/rollouts.md, "Migration from the anchor ConfigMap"): it owned the
// model's serving objects and recorded which release prod ran, which held the
// canary slot, the prod revision and the history. The Model
// (api/v1alpha1/model.h) replaces it; the operator reads an anchor only to
// build the Model from it (controllers/modelrelease/prod/model_record.h).
// The one decoder of its vocabulary. Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {

// The anchor's data keys.
inline constexpr const char* kAnchorPromoted = "promoted";
inline constexpr const char* kAnchorPromotedPackage = "promotedPackage";
inline constexpr const char* kAnchorPromotedClosureHash = "promotedClosureHash";
inline constexpr const char* kAnchorCanary = "canary";
inline constexpr const char* kAnchorHistory = "history";
// Bumped by every change of `promoted` (promotion, manual rollback): a
// rollback request names the revision it was made against.
inline constexpr const char* kAnchorRevision = "revision";
// History entries kept (the oldest go first).
inline constexpr size_t kAnchorHistoryKept = 50;
// history[].action values.
inline constexpr const char* kHistoryPromoted = "Promoted";
inline constexpr const char* kHistoryRolledBack = "RolledBack";  // a canary rolled back
inline constexpr const char* kHistoryRollback = "Rollback";      // a manual rollback

// lockstep-model-<model>
std::string modelAnchorName(const std::string& model);

struct ModelAnchor {
  ObjectMeta meta;
  std::string resourceVersion;
  std::string model;                // label lockstep.dev/model
  std::string promoted;             // the release prod runs; "" before the first promotion
  std::string promotedPackage;      // its package
  std::string promotedClosureHash;  // and closure
  std::string canary;               // the release holding the canary slot; "" when free
  std::string revision;             // data.revision as written ("" when none)
  std::string historyText;          // data.history as written (a JSON array)
  // data.history parsed; an empty array when absent or not a JSON array
  // (historyMalformed tells which).
  nlohmann::json history = nlohmann::json::array();
  bool historyMalformed = false;

  // The prod revision: "0" before the first promotion recorded one.
  std::string prodRevision() const { return revision.empty() ? "0" : revision; }
  // The revision the next change of `promoted` writes.
  std::string nextRevision() const;
};

ModelAnchor decodeModelAnchor(const nlohmann::json& configMap);

// The revision before `revision` ("" when there is none or it is not a number).
std::string previousRevision(const std::string& revision);

}  // namespace lockstep::api::v1alpha1
