#include "api/v1alpha1/model_anchor.h"

#include <cstdint>

#include "api/v1alpha1/keys.h"

namespace lockstep::api::v1alpha1 {

std::string modelAnchorName(const std::string& model) { return "lockstep-model-" + model; }

ModelAnchor decodeModelAnchor(const nlohmann::json& cm) {
  ModelAnchor a;
  a.meta = decodeMeta(cm);
  const nlohmann::json& metadata = decode::object(cm, "metadata");
  a.resourceVersion = decode::string(metadata, "resourceVersion");
  a.model = decode::string(decode::object(metadata, "labels"), kModelLabel);
  const nlohmann::json& data = decode::object(cm, "data");
  a.promoted = decode::string(data, kAnchorPromoted);
  a.promotedPackage = decode::string(data, kAnchorPromotedPackage);
  a.promotedClosureHash = decode::string(data, kAnchorPromotedClosureHash);
  a.canary = decode::string(data, kAnchorCanary);
  a.revision = decode::string(data, kAnchorRevision);
  a.historyText = decode::string(data, kAnchorHistory);
  if (!a.historyText.empty()) {
    nlohmann::json h = nlohmann::json::parse(a.historyText, nullptr, false);
    if (h.is_array()) {
      a.history = std::move(h);
    } else {
      a.historyMalformed = true;
    }
  }
  return a;
}

std::string ModelAnchor::nextRevision() const {
  const std::string r = prodRevision();
  uint64_t n = 0;
  for (char c : r) {
    if (c < '0' || c > '9' || n > 1'000'000'000'000ULL) return "1";  // not ours: start again
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return std::to_string(n + 1);
}

std::string previousRevision(const std::string& revision) {
  if (revision.empty() || revision.size() > 18) return "";
  int64_t n = 0;
  for (char c : revision) {
    if (c < '0' || c > '9') return "";
    n = n * 10 + (c - '0');
  }
  return n > 0 ? std::to_string(n - 1) : "";
}

}  // namespace lockstep::api::v1alpha1
