#include "api/v1alpha1/runtime_admission.h"

#include <algorithm>
#include <utility>

#include "api/image_ref.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

// repository and digest of a pinned image reference; both "" when the reference is
// not pinned by digest or does not parse (then no pod image can match it).
void splitImage(const std::string& image, json& into) {
  StatusOr<ImageRef> ref = parseImageRef(image);
  bool usable = ref.isOk() && ref->pinned();
  into["image"] = image;
  into["repository"] = usable ? ref->repository() : "";
  into["digest"] = usable ? ref->digest : "";
}

}  // namespace

StatusOr<json> runtimeAdmissionSpec(const std::string& ns, const std::vector<RuntimeEnv>& envs,
                                    const std::string& trustedInitImage) {
  if (envs.size() > kRuntimeAdmissionMaxEnvs) {
    return Status(Code::kResourceExhausted, "namespace " + ns + " has " +
                                                std::to_string(envs.size()) +
                                                " RuntimeEnvs; the admission table holds at most " +
                                                std::to_string(kRuntimeAdmissionMaxEnvs));
  }
  std::vector<const RuntimeEnv*> sorted;
  sorted.reserve(envs.size());
  for (const RuntimeEnv& e : envs) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const RuntimeEnv* a, const RuntimeEnv* b) { return a->meta.name < b->meta.name; });

  json table = json::object();
  std::string summary;
  for (const RuntimeEnv* e : sorted) {
    json row = json::object();
    row["ready"] = e->ready();
    row["closureHash"] = e->status.closureHash;
    splitImage(e->spec.image, row);
    row["currentRevision"] = e->status.currentRevision;
    json revisions = json::array();
    std::string pinned;
    for (const RuntimeRevision& r : e->status.revisions) {
      if (r.number != e->status.currentRevision && !r.pinned()) continue;
      if (r.pinnedBy.size() > kRuntimeAdmissionMaxPinsPerRevision) {
        return Status(Code::kResourceExhausted,
                      "RuntimeEnv " + ns + "/" + e->meta.name + " revision " +
                          std::to_string(r.number) + " is pinned by " +
                          std::to_string(r.pinnedBy.size()) +
                          " releases; the admission table holds at most " +
                          std::to_string(kRuntimeAdmissionMaxPinsPerRevision) + " per revision");
      }
      json rev = {{"number", r.number}, {"closureHash", r.closureHash}};
      splitImage(r.image, rev);
      rev["pinnedBy"] = r.pinnedBy;
      revisions.push_back(std::move(rev));
      if (r.pinned() && r.number != e->status.currentRevision) {
        pinned += (pinned.empty() ? "" : ",") + std::to_string(r.number);
      }
    }
    if (revisions.size() > kRuntimeAdmissionMaxRevisions) {
      return Status(Code::kResourceExhausted,
                    "RuntimeEnv " + ns + "/" + e->meta.name + " has " +
                        std::to_string(revisions.size()) +
                        " admitting revisions (current and pinned); the admission table holds at "
                        "most " +
                        std::to_string(kRuntimeAdmissionMaxRevisions) + " per RuntimeEnv");
    }
    row["revisions"] = std::move(revisions);
    table[e->meta.name] = std::move(row);
    summary += (summary.empty() ? "" : " ") + e->meta.name + "=" +
               (e->status.currentRevision > 0 ? std::to_string(e->status.currentRevision) : "-") +
               (pinned.empty() ? "" : "(pinned " + pinned + ")");
  }
  if (summary.size() > 1000) summary = summary.substr(0, 997) + "...";
  json spec = {{"runtimeEnvs", std::move(table)}, {"summary", summary}};
  if (!trustedInitImage.empty()) spec["trustedInitImage"] = trustedInitImage;
  size_t bytes = spec.dump().size();
  if (bytes > kRuntimeAdmissionMaxBytes) {
    return Status(Code::kResourceExhausted,
                  "the admission table of namespace " + ns + " would be " + std::to_string(bytes) +
                      " bytes; at most " + std::to_string(kRuntimeAdmissionMaxBytes));
  }
  return spec;
}

}  // namespace lockstep::api::v1alpha1
