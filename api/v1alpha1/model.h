// Model (lockstep.dev/v1alpha1), decoded once into a typed view: the object
// that owns one model's prod (its Service and stable/canary Deployments, by
// owner reference). Its spec holds what belongs to the model rather than to
// one release (port, replicas, GPU strategy, Service type, history limit,
// change windows);
// its status is the one record of what prod runs, by content: the release
// uid, content digest, package and pinned runtime pair of prod and of the
// canary in flight, the prod revision and a bounded history. Field names are
// those of crds/lockstep.dev_models.yaml; the semantics are docs/rollouts.md
// ("Objects and ownership", "Content identity").
//
// Also the content identity of a release (contentDigest): what prod runs is
// known by its content, never by a release's name, which anyone may delete
// and re-create with other content.
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/runtime_revision.h"

namespace lockstep::api::v1alpha1 {

// History entries kept in status.history (the oldest go first).
inline constexpr size_t kModelHistoryKept = 50;
// status.history[].action values.
inline constexpr const char* kModelActionPromoted = "Promoted";
inline constexpr const char* kModelActionRolledBack = "RolledBack";  // a canary rolled back
inline constexpr const char* kModelActionRollback = "Rollback";      // a manual rollback
// Built from an anchor ConfigMap of an earlier version (docs/rollouts.md "Migration").
inline constexpr const char* kModelActionAdopted = "Adopted";
// A re-created release object with prod's very content now stands for it.
inline constexpr const char* kModelActionRecognized = "Recognized";

// ---- content identity ---------------------------------------------------------------------

// ModelRelease reasons of content identity (docs/rollouts.md "Content
// identity"; a stable API like those of conditions.h, kept beside the rule).
// A release object re-created under the name prod's content was recorded
// under, with that very content (package digest, pinned pair, stages), is
// prod: Promoted at once, no gate, canary or pod (Ready=True with this reason).
inline constexpr const char* kReasonRecognizedAsProd = "RecognizedAsProd";
// A release under the name prod's content was recorded under, with other
// content (another object): it may run its gates but never takes prod under
// that name: Stalled before its canary, prod untouched.
inline constexpr const char* kReasonContentMismatch = "ContentMismatch";

// What a release's content is: the package by digest, the pinned runtime pair
// (image by digest, closure hash) and the validated stage specs (spec.stages).
struct ReleaseContent {
  std::string package;      // repo@sha256:<hex> (only the digest counts)
  std::string image;        // the pinned runtime image, repo@sha256:<hex> (only the digest counts)
  std::string closureHash;  // sha256:<hex>
  nlohmann::json stages = nlohmann::json::array();  // spec.stages as stored
};

// "sha256:<64 hex>" over a canonical form of `c`: object keys sorted, any
// formatting gone, an integral number written as an integer (2.0 is 2), and
// the package and image reduced to their digests (the same bytes under
// another repository name or registry spelling are the same content). Stable
// under reordering and reformatting; changes when any of the package digest,
// the image digest, the closure hash or a stage field changes.
std::string contentDigest(const ReleaseContent& c);

// "sha256:<64 hex>" over `domain` followed by the canonical JSON of `j` (as
// contentDigest: object keys sorted, an integral number written as an
// integer, no formatting).
std::string canonicalDigest(std::string_view domain, const nlohmann::json& j);

// The content of the ModelRelease `release` (its spec) on the pinned pair
// `pin` (its status.runtime, or the pair it would run on).
ReleaseContent releaseContent(const nlohmann::json& release, const RuntimePin& pin);

// The digest part of an image or package reference ("sha256:…" after '@'), or
// the reference itself when it has none.
std::string referenceDigest(const std::string& reference);

// ---- the Model ----------------------------------------------------------------------------

// spec.changeWindows: when new work on the model may start (docs/change-windows.md). Decoded
// as written, defaults applied; changewindows/ compiles and checks them (the recurrence rule
// and the time zone need its libraries) and evaluates them against a clock it is given.
inline constexpr size_t kMaxChangeWindows = 20;
inline constexpr size_t kMaxChangeWindowRruleLength = 512;
inline constexpr size_t kMaxChangeWindowNameLength = 63;
inline constexpr size_t kMaxChangeWindowTimeZoneLength = 64;
// kind
inline constexpr const char* kChangeWindowAllow = "Allow";
inline constexpr const char* kChangeWindowDeny = "Deny";
// inFlight: what work already started does once the window closes the model
inline constexpr const char* kInFlightFinishStep = "finishStep";  // the default
inline constexpr const char* kInFlightPause = "pause";
inline constexpr const char* kInFlightAbort = "abort";
// rollbacks: whether a manual rollback may run while the window closes the model
inline constexpr const char* kRollbacksAllow = "Allow";  // the default
inline constexpr const char* kRollbacksDeny = "Deny";
inline constexpr const char* kDefaultChangeWindowTimeZone = "UTC";

struct ChangeWindowSpec {
  std::string name;      // optional, for messages
  std::string kind;      // Allow | Deny
  std::string rrule;     // RFC 5545 RRULE value: "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16"
  std::string duration;  // "64h", "2d16h" (d: calendar days in timeZone)
  std::string timeZone = kDefaultChangeWindowTimeZone;  // IANA name
  std::string inFlight = kInFlightFinishStep;
  std::string rollbacks = kRollbacksAllow;
};

// spec.changeWindows as the API server stores it: a missing field reads as its default, a
// mistyped one as "" (the compiler then names it); a non-object entry as an empty window.
std::vector<ChangeWindowSpec> decodeChangeWindows(const nlohmann::json& spec);
nlohmann::json encodeChangeWindow(const ChangeWindowSpec& w);

struct ModelRuntime {
  std::string runtimeEnv;
  std::string image;
  std::string closureHash;
  int64_t revision = 0;  // the RuntimeEnv revision number; 0: not recorded
};

// status.prod.stages is recorded only up to this size (compact JSON, bytes):
// the Model's status stays far below the API server's object limit
// (docs/limits.md).
inline constexpr size_t kMaxRecordedStagesBytes = 64 * 1024;

// status.prod and status.canary: one release's content in prod.
struct ProdContent {
  std::string release;  // its name (the object may be gone since: prod keeps its content)
  std::string uid;      // the object that brought the content to prod
  std::string contentDigest;
  std::string package;
  ModelRuntime runtime;
  std::string since;  // when it took prod (canary: when it took the slot)
  // status.prod only: the release object's spec.stages as stored (its serving
  // template among them), which contentDigest covers with the package and the
  // pinned pair, so prod's serving objects can be rebuilt once that object is
  // gone (docs/rollouts.md "Prod heals"). Null: not recorded (a record an
  // earlier operator wrote, or over kMaxRecordedStagesBytes).
  nlohmann::json stages;
  // Why stages is not recorded when it was too large ("" otherwise).
  std::string stagesNotRecorded;
};

// Records `stages` (a release's spec.stages) in `p`; over
// kMaxRecordedStagesBytes they are left out and p.stagesNotRecorded says so.
void recordStages(ProdContent& p, const nlohmann::json& stages);

// Whether `stages` hash, with p's package and pinned runtime pair, to
// p.contentDigest (false when p records no digest): a record is followed only
// when it is the very content prod runs.
bool stagesMatchContent(const ProdContent& p, const nlohmann::json& stages);

struct ModelHistoryEntry {
  std::string action;  // kModelAction*
  std::string release, uid, contentDigest, package;
  ModelRuntime runtime;
  int64_t revision = 0;  // the prod revision it made (Promoted, Rollback)
  std::string at;
  std::string reason;  // RolledBack: the canary's reason
  std::string stable;  // RolledBack: the release stable stayed on
  std::string from;    // Rollback: the release prod ran before
  std::string by;      // Rollback: the user who asked
};

// A manual rollback's deadline when the Model sets none (Deployment's progressDeadlineSeconds).
inline constexpr int64_t kDefaultRollbackDeadlineSeconds = 600;

struct ModelSpec {
  std::optional<int64_t> port;      // the Service port; unset: the release's serving.port
  std::optional<int64_t> replicas;  // prod's N; unset: the release's serving.replicas
  std::string capacity;             // surge | drain; "": the release's canary.capacity
  std::string serviceType = "ClusterIP";
  int64_t revisionHistoryLimit = kDefaultRevisionHistoryLimit;
  // How long a manual rollback may take to have N Ready stable pods before it
  // is reported failed (RollbackDeadlineExceeded).
  int64_t rollbackDeadlineSeconds = kDefaultRollbackDeadlineSeconds;
  std::vector<ChangeWindowSpec> changeWindows;
};

struct ModelStatus {
  int64_t observedGeneration = -1;
  int64_t revision = 0;  // the prod revision (0 before the first promotion)
  std::optional<ProdContent> prod;
  std::optional<ProdContent> canary;
  std::vector<ModelHistoryEntry> history;  // oldest first
  nlohmann::json conditions = nlohmann::json::array();
};

struct Model {
  ObjectMeta meta;
  std::string resourceVersion;
  std::map<std::string, std::string> annotations;  // metadata.annotations (string values)
  bool deleting = false;                           // metadata.deletionTimestamp set
  ModelSpec spec;
  ModelStatus status;

  // The prod revision as a rollback annotation names it ("0" before the first promotion).
  std::string prodRevision() const { return std::to_string(status.revision); }
  // The revision the next change of prod records.
  int64_t nextRevision() const { return status.revision + 1; }
  // The release prod runs ("" before the first promotion) and the one holding
  // the canary slot ("" when free), by name.
  std::string promoted() const { return status.prod ? status.prod->release : std::string(); }
  std::string canaryHolder() const {
    return status.canary ? status.canary->release : std::string();
  }
};

// Whether `model`'s record shows that prod ran the release object `name`/`uid`
// whose content digest is `contentDigest` ("" when it has no pinned pair): its
// prod or a history entry that put it in prod (Promoted, Rollback, Recognized,
// Adopted), matched by uid, or by name with the same content digest (the
// object re-created with the very content prod ran). An entry that records no
// uid (one adopted from an anchor ConfigMap) matches by name. A manual rollback
// targets only such a release: status.canary alone is not the operator's record.
bool recordShowsProdRan(const Model& model, const std::string& name, const std::string& uid,
                        const std::string& contentDigest);

// The release a rollback with no target goes back to: the newest release of
// `model`'s history (Promoted or Rollback entries, newest first) other than the
// one prod runs now for which `exists` holds; "" when none. The CLI's and the
// controller's default, and so an Argo CD action's (which names no target).
std::string previousProdRelease(const Model& model,
                                const std::function<bool(const std::string&)>& exists);

// A rollback asked on the Model itself at prod revision `revision`
// (kRollbackAnnotationPrefix + revision: the user; kRollbackToAnnotationPrefix +
// revision: the target, "" for previousProdRelease). nullopt when none is asked.
struct ModelRollbackAsk {
  std::string by;  // the requesting user, as admission checked it
  std::string to;  // the named target; "": the default
};
std::optional<ModelRollbackAsk> modelRollbackAsk(const Model& model, const std::string& revision);

// The owner reference every serving object of the model carries (controller: true).
nlohmann::json modelOwnerReference(const std::string& name, const std::string& uid);

Model decodeModel(const nlohmann::json& object);

// Why a Model's record holds a pair pinned.
enum class ModelPinHold { kProd, kCanary, kRollbackTarget };

// One pair a Model's record holds (docs/contracts.md "Runtime revisions":
// pins come from what prod runs), under the release name its serving pods
// carry (label lockstep.dev/release), whether or not that release object
// still exists, so admission admits them while the Model records it.
struct ModelPin {
  std::string model;
  std::string release;
  std::string runtimeEnv;
  RuntimePin pair;  // revision: the number recorded with it (0: unknown)
  ModelPinHold hold = ModelPinHold::kProd;
  bool operator==(const ModelPin&) const = default;
};

// The pairs the Model's record holds pinned (docs/contracts.md "Runtime
// revisions", "What stays pinned"): prod's, the canary's, and those of the
// last spec.revisionHistoryLimit other releases prod ran (history entries
// other than RolledBack; newest first, one per release). Entries without a
// recorded image and closure hash (adopted from an anchor) hold nothing.
std::vector<ModelPin> modelPins(const Model& model);

nlohmann::json encodeProdContent(const ProdContent& p);
nlohmann::json encodeHistoryEntry(const ModelHistoryEntry& h);
// The whole status as the CRD spells it (conditions as given).
nlohmann::json encodeModelStatus(const ModelStatus& s);

// `history` with `entry` appended and the oldest dropped past kModelHistoryKept.
void appendHistory(std::vector<ModelHistoryEntry>& history, ModelHistoryEntry entry);

}  // namespace lockstep::api::v1alpha1
