#include "evidence/verify.h"

#include "evidence/bundle.h"
#include "evidence/dsse.h"
#include "evidence/fleet_statement.h"
#include "evidence/statement.h"

namespace lockstep::evidence {
namespace {

std::string keyNames(const std::vector<TrustedKey>& keys) {
  std::string out;
  for (const TrustedKey& k : keys) out += (out.empty() ? "" : ", ") + k.name;
  return out.empty() ? "none" : out;
}

// "sha256:<hex>" of a ResourceDescriptor's digest set, "" when it has none.
std::string sha256Of(const nlohmann::json& descriptor) {
  if (!descriptor.is_object() || !descriptor.contains("digest")) return "";
  const nlohmann::json& d = descriptor.at("digest");
  if (!d.is_object() || !d.contains("sha256") || !d.at("sha256").is_string()) return "";
  return "sha256:" + d.at("sha256").get<std::string>();
}

std::string stringAtVerify(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>()
                                                                   : "";
}

}  // namespace

StatusOr<VerifiedStatement> verifyBundle(std::string_view bundleText,
                                         const std::vector<TrustedKey>& keys,
                                         const Expectation& want, const std::string& origin,
                                         Refusal* why) {
  auto refuse = [&](Refusal r, const std::string& message) -> Status {
    if (why != nullptr) *why = r;
    return invalidArgument(origin + ": " + message);
  };
  if (why != nullptr) *why = Refusal::kNone;
  auto bundle = parseBundle(bundleText, origin);
  if (!bundle.isOk()) {
    if (why != nullptr) *why = Refusal::kMalformed;
    return bundle.status();
  }
  const Envelope& e = bundle->envelope;
  if (e.payloadType != kInTotoPayloadType) {
    return refuse(Refusal::kMalformed,
                  "payloadType \"" + e.payloadType + "\" is not " + kInTotoPayloadType);
  }

  // The signature first, over exactly the bytes that the statement is read from.
  const std::string message = pae(e.payloadType, e.payload);
  const std::string& sig = e.signatures[0].sig;
  const std::string hint = bundle->keyHint.empty() ? e.signatures[0].keyid : bundle->keyHint;
  const TrustedKey* hinted = nullptr;
  const TrustedKey* verifiedBy = nullptr;
  for (const TrustedKey& k : keys) {
    if (!hint.empty() && k.key->hint() == hint) hinted = &k;
  }
  if (hinted != nullptr) {
    if (hinted->key->verify(message, sig)) verifiedBy = hinted;
  } else {
    // No hint, or one no trusted key has: the hint is unauthenticated, so try them all.
    for (const TrustedKey& k : keys) {
      if (verifiedBy == nullptr && k.key->verify(message, sig)) verifiedBy = &k;
    }
  }
  if (verifiedBy == nullptr && hinted != nullptr) {
    return refuse(Refusal::kBadSignature,
                  "the signature does not verify with trusted key " + hinted->name +
                      ": the statement or its signature was altered after signing");
  }
  if (verifiedBy == nullptr && !hint.empty()) {
    return refuse(Refusal::kUntrustedKey, "signed by a key that is not trusted (key hint " + hint +
                                              "; trusted: " + keyNames(keys) + ")");
  }
  if (verifiedBy == nullptr) {
    return refuse(Refusal::kUntrustedKey,
                  "no trusted key verifies the signature (trusted: " + keyNames(keys) +
                      "): signed by another key, or altered after signing");
  }

  VerifiedStatement v;
  v.keyName = verifiedBy->name;
  v.payload = e.payload;
  v.statement = nlohmann::json::parse(v.payload, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json& s = v.statement;
  if (s.is_discarded() || !s.is_object()) {
    return refuse(Refusal::kMalformed, "the signed payload is not a JSON object");
  }
  if (stringAtVerify(s, "_type") != kStatementType) {
    return refuse(Refusal::kMalformed,
                  "_type \"" + stringAtVerify(s, "_type") + "\" is not " + kStatementType);
  }
  v.predicateType = stringAtVerify(s, "predicateType");
  if (!want.predicateType.empty() && v.predicateType != want.predicateType) {
    return refuse(Refusal::kOtherPredicate,
                  "predicateType " + v.predicateType + ", not " + want.predicateType);
  }

  std::string subjects;
  bool aboutPackage = false;
  if (s.contains("subject") && s.at("subject").is_array()) {
    for (const nlohmann::json& sub : s.at("subject")) {
      const std::string d = sha256Of(sub);
      subjects += (subjects.empty() ? "" : ", ") + (d.empty() ? "(no sha256)" : d);
      aboutPackage = aboutPackage || (!d.empty() && d == want.subjectDigest);
    }
  }
  if (!aboutPackage) {
    return refuse(Refusal::kOtherSubject, "the statement is about " +
                                              (subjects.empty() ? "no subject" : subjects) +
                                              ", not the package " + want.subjectDigest);
  }

  const nlohmann::json predicate = s.value("predicate", nlohmann::json::object());
  v.stage = stringAtVerify(predicate.value("lockstep", nlohmann::json::object()), "stage");
  if (v.predicateType == kCycloneDxBomPredicate) {
    // An ML-BOM is a record, not a verdict: it passes once its signature and subject do.
    v.stage = "bom";
    v.passed = true;
  } else if (v.predicateType == kProdRecordPredicate) {
    // A prod record passes when the release was promoted (served as prod).
    v.stage = "prod";
    v.passed = stringAtVerify(predicate, "outcome") == "Promoted";
  } else if (v.predicateType == kWavePermitPredicate || v.predicateType == kFleetAbortPredicate) {
    // A hub's permit or abort is a record, trusted for the fleet stage: its
    // signature is what counts (docs/fleet.md "Fleet statements").
    v.stage = kFleetStage;
    v.passed = true;
  } else if (v.predicateType == kVerificationSummaryPredicate) {
    v.stageSpecDigest = sha256Of(predicate.value("policy", nlohmann::json::object()));
    v.passed = stringAtVerify(predicate, "verificationResult") == "PASSED";
  } else {
    for (const nlohmann::json& c : predicate.value("configuration", nlohmann::json::array())) {
      if (stringAtVerify(c, "mediaType") == kStageSpecMediaType) v.stageSpecDigest = sha256Of(c);
    }
    v.passed = stringAtVerify(predicate, "result") == "PASSED";
  }
  if (!want.stage.empty() && v.stage != want.stage) {
    return refuse(Refusal::kOtherStage,
                  "a statement for stage \"" + v.stage + "\", not \"" + want.stage + "\"");
  }
  if (!want.stageSpecDigest.empty() && v.stageSpecDigest != want.stageSpecDigest) {
    return refuse(Refusal::kOtherSpec,
                  "a verdict for stage spec " +
                      (v.stageSpecDigest.empty() ? "(none)" : v.stageSpecDigest) +
                      ", not this release's " + want.stageSpecDigest +
                      ": the stage changed since (thresholds, gate); no evidence for it");
  }
  if (want.requirePassed && !v.passed) {
    return refuse(Refusal::kNotPassed,
                  "the statement records a failure (stage \"" + v.stage + "\"), not a pass");
  }
  return v;
}

}  // namespace lockstep::evidence
