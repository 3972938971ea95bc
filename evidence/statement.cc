#include "evidence/statement.h"

#include "closure/closure.h"
#include "evidence/purl.h"

namespace lockstep::evidence {
namespace {

using Json = nlohmann::ordered_json;

// {"sha256": "<hex>"} of a "sha256:<hex>" digest.
Json digestSet(const std::string& digest) { return Json{{"sha256", digest.substr(7)}}; }

Status checkDigest(const std::string& digest, const std::string& field) {
  if (!api::isSha256Digest(digest)) {
    return invalidArgument(field + ": \"" + digest + "\" is not sha256:<64 lowercase hex>");
  }
  return Status::ok();
}

StatusOr<Json> subject(const api::ImageRef& package) {
  if (!api::isSha256Digest(package.digest)) {
    return invalidArgument("subject: package " + package.repository() +
                           " is not pinned by digest (@sha256:…)");
  }
  return Json::array({Json{{"name", package.repository()}, {"digest", digestSet(package.digest)}}});
}

Json stageSpecDescriptor(const std::string& stage, const std::string& digest) {
  return Json{{"name", "stage/" + stage},
              {"digest", digestSet(digest)},
              {"mediaType", kStageSpecMediaType}};
}

// An image reference as a ResourceDescriptor: its purl and digest when pinned.
Json imageDescriptor(const std::string& name, const std::string& image) {
  Json d{{"name", name}};
  auto ref = api::parseImageRef(image);
  if (ref.isOk() && ref->pinned()) {
    d["uri"] = ociPackageUrl(*ref);
    d["digest"] = digestSet(ref->digest);
  } else {
    d["uri"] = image;
  }
  return d;
}

// The statements a verdict rests on, as resource descriptors of their payloads.
StatusOr<Json> inputAttestations(const std::vector<InputAttestation>& in) {
  Json inputs = Json::array();
  for (const InputAttestation& a : in) {
    LOCKSTEP_RETURN_IF_ERROR(checkDigest(a.payloadDigest, "inputAttestations[" + a.name + "]"));
    inputs.push_back(Json{{"name", a.name},
                          {"digest", digestSet(a.payloadDigest)},
                          {"mediaType", kInTotoPayloadType}});
  }
  return inputs;
}

Json inTotoStatement(Json subjects, const char* predicateType, Json predicate) {
  return Json{{"_type", kStatementType},
              {"subject", std::move(subjects)},
              {"predicateType", predicateType},
              {"predicate", std::move(predicate)}};
}

}  // namespace

std::string sha256Digest(std::string_view bytes) { return "sha256:" + closure::sha256Hex(bytes); }

std::string stageSpecDigest(const nlohmann::json& stageSpec) {
  return sha256Digest(stageSpec.dump());
}

StatusOr<nlohmann::ordered_json> evalStatement(const EvalStatementInput& in) {
  auto subjects = subject(in.package);
  if (!subjects.isOk()) return subjects.status();
  const GateResult& g = in.gate;
  LOCKSTEP_RETURN_IF_ERROR(checkDigest(g.stageSpecDigest, "gate.stageSpecDigest"));
  if (!in.closureHash.empty()) LOCKSTEP_RETURN_IF_ERROR(checkDigest(in.closureHash, "closureHash"));

  Json passed = Json::array(), failed = Json::array(), metrics = Json::array();
  for (const MetricResult& m : g.metrics) {
    (m.passed() ? passed : failed).push_back(m.name);
    // One claim per comparator, as the proposed eval-result predicate states them.
    auto claim = [&](const char* comparator, std::optional<double> threshold) {
      Json c{{"metric", m.name}, {"value", m.value}};
      if (threshold) {
        c["comparator"] = comparator;
        c["threshold"] = *threshold;
        c["passed"] =
            std::string(comparator) == ">=" ? m.value >= *threshold : m.value <= *threshold;
      }
      metrics.push_back(c);
    };
    if (!m.min && !m.max) claim("", std::nullopt);
    if (m.min) claim(">=", m.min);
    if (m.max) claim("<=", m.max);
  }
  Json configuration = Json::array({stageSpecDescriptor(g.stage, g.stageSpecDigest)});
  if (!g.image.empty()) configuration.push_back(imageDescriptor("gate-image", g.image));

  Json job{{"uid", g.jobUid}, {"image", g.image}, {"command", g.command}};
  if (!g.startedAt.empty()) job["startedAt"] = g.startedAt;
  if (!g.finishedAt.empty()) job["finishedAt"] = g.finishedAt;
  Json own{{"stage", g.stage}, {"metrics", metrics}, {"gateJob", job}};
  if (!in.closureHash.empty()) own["closureHash"] = in.closureHash;
  if (!in.runtimeImage.empty()) own["runtimeImage"] = in.runtimeImage;

  Json predicate{{"result", g.passed() ? "PASSED" : "FAILED"},
                 {"configuration", configuration},
                 {"passedTests", passed},
                 {"warnedTests", Json::array()},
                 {"failedTests", failed},
                 {"lockstep", own}};
  return inTotoStatement(*subjects, kTestResultPredicate, predicate);
}

StatusOr<nlohmann::ordered_json> decisionStatement(const DecisionInput& in) {
  auto subjects = subject(in.package);
  if (!subjects.isOk()) return subjects.status();
  LOCKSTEP_RETURN_IF_ERROR(checkDigest(in.stageSpecDigest, "stageSpecDigest"));
  if (!in.closureHash.empty()) LOCKSTEP_RETURN_IF_ERROR(checkDigest(in.closureHash, "closureHash"));
  auto inputs = inputAttestations(in.inputs);
  if (!inputs.isOk()) return inputs.status();
  Json approvers = Json::array();
  for (const Approver& a : in.approvers) {
    Json j{{"user", a.user}};
    if (a.groupsRecorded) j["groups"] = a.groups;
    if (!a.approvedAt.empty()) j["approvedAt"] = a.approvedAt;
    approvers.push_back(j);
  }
  Json verifier{{"id", kVerifierId}};
  if (!in.verifierVersion.empty()) verifier["version"] = Json{{"lockstep", in.verifierVersion}};
  Json own{{"stage", in.stage}, {"approvers", approvers}};
  if (!in.closureHash.empty()) own["closureHash"] = in.closureHash;
  if (!in.runtimeImage.empty()) own["runtimeImage"] = in.runtimeImage;
  if (!in.revision.empty()) own["revision"] = in.revision;

  Json predicate;
  predicate["verifier"] = verifier;
  if (!in.timeVerified.empty()) predicate["timeVerified"] = in.timeVerified;
  predicate["resourceUri"] = ociPackageUrl(in.package);
  predicate["policy"] = stageSpecDescriptor(in.stage, in.stageSpecDigest);
  predicate["inputAttestations"] = *inputs;
  predicate["verificationResult"] = in.passed ? "PASSED" : "FAILED";
  // VSA v1 reserves the SLSA_ prefix; a custom level names what was verified.
  predicate["verifiedLevels"] = Json::array({in.passed ? "LOCKSTEP_STAGE_PASSED" : "FAILED"});
  predicate["lockstep"] = own;
  return inTotoStatement(*subjects, kVerificationSummaryPredicate, predicate);
}

StatusOr<nlohmann::ordered_json> prodRecordStatement(const ProdRecordInput& in) {
  auto subjects = subject(in.package);
  if (!subjects.isOk()) return subjects.status();
  if (in.outcome != "Promoted" && in.outcome != "RolledBack")
    return invalidArgument("outcome: \"" + in.outcome + "\" is not Promoted or RolledBack");
  if (!in.closureHash.empty()) LOCKSTEP_RETURN_IF_ERROR(checkDigest(in.closureHash, "closureHash"));
  auto inputs = inputAttestations(in.inputs);
  if (!inputs.isOk()) return inputs.status();
  Json predicate{{"outcome", in.outcome},
                 {"cluster", in.cluster},
                 {"namespace", in.ns},
                 {"model", in.model},
                 {"release", Json{{"name", in.release}, {"uid", in.releaseUid}}},
                 {"since", in.since}};
  Json runtime = Json::object();
  if (!in.closureHash.empty()) runtime["closureHash"] = in.closureHash;
  if (!in.runtimeImage.empty()) runtime["image"] = in.runtimeImage;
  if (!in.revision.empty()) runtime["revision"] = in.revision;
  predicate["runtime"] = runtime;
  if (!in.reason.empty()) predicate["reason"] = in.reason;
  if (!in.message.empty()) predicate["message"] = in.message;
  predicate["canarySteps"] = in.canarySteps.is_array() ? Json(in.canarySteps) : Json::array();
  if (in.failedStep.is_object()) predicate["failedStep"] = Json(in.failedStep);
  if (!in.restoredPackage.empty()) predicate["restoredPackage"] = in.restoredPackage;
  predicate["inputAttestations"] = *inputs;
  return inTotoStatement(*subjects, kProdRecordPredicate, predicate);
}

}  // namespace lockstep::evidence
