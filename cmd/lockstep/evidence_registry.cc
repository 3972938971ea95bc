#include "cmd/lockstep/evidence_registry.h"

#include <nlohmann/json.hpp>

#include <map>
#include <ostream>

#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/registry_access.h"
#include "cmd/lockstep/verifier_trust.h"
#include "common/flags.h"
#include "evidence/bundle.h"
#include "evidence/dsse.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/statement.h"
#include "evidence/verify.h"
#include "operator/registry/bundle_referrers.h"
#include "operator/registry/reference.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;

constexpr const char* kPredicateAnnotation = registry::kBundlePredicateAnnotation;
constexpr const char* kStatementAnnotation = registry::kBundleStatementAnnotation;

std::vector<FlagSpec> accessFlags(std::vector<FlagSpec> more) {
  more.push_back({"authfile", "",
                  "docker config with the registry's credentials (default: "
                  "$REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, "
                  "~/.docker/config.json)"});
  more.push_back({"cert-dir", "", "a directory of *.crt CA certificates (default: system roots)"});
  return more;
}

using Referrer = registry::BundleReferrer;

struct Session {
  registry::PackageRef package;
  std::unique_ptr<registry::RegistryClient> client;
  bool viaTag = false;
  std::vector<Referrer> referrers;
};

// Opens the registry and reads every bundle referrer of the package.
StatusOr<Session> open(const Flags& flags) {
  if (flags.positional().size() != 1)
    return invalidArgument("give one PACKAGE (REGISTRY/REPOSITORY@sha256:…)");
  Session s;
  auto ref = registry::parsePackageRef(flags.positional()[0]);
  if (!ref.isOk()) return ref.status();
  s.package = *ref;
  auto client = openRegistry(ref->apiHost(), {flags.get("authfile"), flags.get("cert-dir")});
  if (!client.isOk()) return client.status();
  s.client = std::move(*client);
  auto list = registry::readBundleReferrers(*s.client, ref->repository, ref->digest);
  if (!list.isOk()) return list.status();
  s.viaTag = list->viaTag;
  s.referrers = std::move(list->referrers);
  return s;
}

std::string annotation(const registry::Descriptor& d, const char* key) {
  return registry::annotationOf(d, key);
}

std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s;
}

}  // namespace

std::optional<int> parseEvidenceFlags(const VerbContext& ctx, Flags& flags, const std::string& name,
                                      const std::vector<std::string>& args) {
  std::vector<const char*> argv{name.c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << name << ": " << s.message() << "\n";
    evidenceUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (flags.helpRequested()) {
    evidenceUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  return std::nullopt;
}

int runEvidenceList(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(
      accessFlags({{"output", "table", "table or json", FlagType::kChoice, {"table", "json"}}}),
      /*maxPositional=*/1);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence list", args)) return *rc;
  auto s = open(flags);
  if (!s.isOk()) {
    ctx.err << "evidence list: " << s.status().message() << "\n";
    return kExitFailure;
  }
  json out = json::array();
  for (const Referrer& r : s->referrers) {
    json e = {{"referrer", r.descriptor.digest},
              {"predicateType", annotation(r.descriptor, kPredicateAnnotation)},
              {"statement", annotation(r.descriptor, kStatementAnnotation)},
              {"created", annotation(r.descriptor, "org.opencontainers.image.created")}};
    if (!r.error.empty()) {
      e["error"] = r.error;
    } else if (auto b = evidence::parseBundle(r.bundle, r.descriptor.digest); b.isOk()) {
      e["keyHint"] = b->keyHint;
    } else {
      e["error"] = b.status().message();
    }
    out.push_back(e);
  }
  if (flags.get("output") == "json") {
    ctx.out << out.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << s->package.name() << "@" << s->package.digest << ": " << out.size()
          << " signed statement" << (out.size() == 1 ? "" : "s")
          << (s->viaTag ? " (tag " + registry::referrersTag(s->package.digest) +
                              ": the registry has no referrers API)"
                        : "")
          << "\n";
  if (out.empty()) return kExitOk;
  ctx.out << pad("STATEMENT", 18) << pad("PREDICATE", 52) << pad("SIGNER (key hint)", 48)
          << "REFERRER\n";
  for (const json& e : out) {
    ctx.out << pad(e.value("statement", "-"), 18) << pad(e.value("predicateType", "-"), 52)
            << pad(e.contains("error") ? "unreadable: " + e["error"].get<std::string>()
                                       : e.value("keyHint", "-"),
                   48)
            << e.value("referrer", "") << "\n";
  }
  return kExitOk;
}

int runEvidenceGet(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(accessFlags({{"statement", "", "the statement's name: eval/decision, prod/promoted…"},
                           {"referrer", "", "the referrer manifest's digest"},
                           {"bundle", "false", "print the signed bundle, not the statement",
                            FlagType::kBool}}),
              /*maxPositional=*/1);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence get", args)) return *rc;
  if (flags.get("statement").empty() == flags.get("referrer").empty()) {
    ctx.err << "evidence get: give --statement NAME or --referrer DIGEST\n";
    return kExitUsage;
  }
  auto s = open(flags);
  if (!s.isOk()) {
    ctx.err << "evidence get: " << s.status().message() << "\n";
    return kExitFailure;
  }
  const Referrer* found = nullptr;
  for (const Referrer& r : s->referrers) {
    if (!flags.get("referrer").empty() && r.descriptor.digest == flags.get("referrer")) found = &r;
    if (!flags.get("statement").empty() &&
        annotation(r.descriptor, kStatementAnnotation) == flags.get("statement"))
      found = &r;  // the last pushed wins
  }
  if (found == nullptr) {
    ctx.err << "evidence get: no such statement among the " << s->referrers.size()
            << " signed referrers of " << s->package.name() << "@" << s->package.digest << "\n";
    return kExitFailure;
  }
  if (!found->error.empty()) {
    ctx.err << "evidence get: " << found->error << "\n";
    return kExitFailure;
  }
  if (flags.getBool("bundle")) {
    ctx.out << found->bundle << "\n";
    return kExitOk;
  }
  auto b = evidence::parseBundle(found->bundle, found->descriptor.digest);
  if (!b.isOk()) {
    ctx.err << "evidence get: " << b.status().message() << "\n";
    return kExitFailure;
  }
  // Unverified: `evidence verify` checks the signature.
  // In the order it was signed.
  nlohmann::ordered_json statement =
      nlohmann::ordered_json::parse(b->envelope.payload, nullptr, false);
  if (statement.is_discarded()) {
    ctx.err << "evidence get: " << found->descriptor.digest << ": the payload is not JSON\n";
    return kExitFailure;
  }
  ctx.out << statement.dump(2) << "\n";
  return kExitOk;
}

int runEvidenceVerify(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(
      accessFlags({{"key", "", "trusted public keys, PEM files, comma-separated"},
                   {"policy", "", "a TrustPolicy file (YAML or JSON; a List of them too)"},
                   {"stage", "", "only the statements of this stage (eval, ci, prod)"},
                   {"spec-digest", "", "the stage spec digest verdicts must be for, sha256:…"},
                   {"predicate",
                    "any",
                    "only statements with this predicate",
                    FlagType::kChoice,
                    {"any", "eval", "decision", "prod"}}}),
      /*maxPositional=*/1);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence verify", args)) return *rc;
  if (flags.get("key").empty() == flags.get("policy").empty()) {
    ctx.err << "evidence verify: give --key FILES or --policy FILE\n";
    return kExitUsage;
  }
  auto trust = loadTrust(flags.get("key"), flags.get("policy"));
  if (!trust.isOk()) {
    ctx.err << "evidence verify: " << trust.status().message() << "\n";
    return kExitFailure;
  }
  auto s = open(flags);
  if (!s.isOk()) {
    ctx.err << "evidence verify: " << s.status().message() << "\n";
    return kExitFailure;
  }
  // The keys some rule trusts for this package, at any stage; the stage is
  // checked once the statement is verified.
  const std::vector<evidence::TrustedKey> keys = trust->keysFor(s->package.name());
  if (keys.empty()) {
    ctx.err << "evidence verify: no rule of " << flags.get("policy") << " trusts a key for "
            << s->package.name() << "\n";
    return kExitFailure;
  }
  const std::map<std::string, std::string> predicates = {
      {"eval", evidence::kTestResultPredicate},
      {"decision", evidence::kVerificationSummaryPredicate},
      {"prod", evidence::kProdRecordPredicate}};
  const std::string wantPredicate =
      flags.get("predicate") == "any" ? "" : predicates.at(flags.get("predicate"));
  int verified = 0, refused = 0;
  for (const Referrer& r : s->referrers) {
    // Filter by what the registry says; the verification checks what was signed.
    const std::string predicate = annotation(r.descriptor, kPredicateAnnotation);
    if (!wantPredicate.empty() && !predicate.empty() && predicate != wantPredicate) continue;
    const std::string where = "referrer " + r.descriptor.digest;
    if (!r.error.empty()) {
      ctx.out << "refused: " << where << ": " << r.error << "\n";
      ++refused;
      continue;
    }
    evidence::Expectation want;
    want.subjectDigest = s->package.digest;
    want.predicateType = wantPredicate;
    want.stage = flags.get("stage");
    want.stageSpecDigest = flags.get("spec-digest");
    // A rolled-back prod record is a true record, not a pass: shown, not refused.
    want.requirePassed = predicate != evidence::kProdRecordPredicate;
    evidence::Refusal why = evidence::Refusal::kNone;
    auto v = evidence::verifyBundle(r.bundle, keys, want, where, &why);
    if (!v.isOk()) {
      // Another stage's statement is not asked about: skipped, not refused.
      if (why == evidence::Refusal::kOtherStage) continue;
      ctx.out << "refused: " << v.status().message() << "\n";
      ++refused;
      continue;
    }
    if (!trust->trusts(v->keyName, s->package.name(), v->stage)) {
      ctx.out << "refused: " << where << ": signed by " << v->keyName
              << ", which the policy does not trust for stage \"" << v->stage << "\" of "
              << s->package.name() << "\n";
      ++refused;
      continue;
    }
    ++verified;
    ctx.out << "verified: " << annotation(r.descriptor, kStatementAnnotation) << " "
            << v->predicateType << ", stage \"" << v->stage << "\""
            << (v->stageSpecDigest.empty() ? "" : ", spec " + v->stageSpecDigest) << ", signed by "
            << v->keyName << "\n";
  }
  if (refused > 0 || verified == 0) {
    ctx.err << "evidence verify: " << verified << " verified, " << refused << " refused"
            << (verified == 0 && refused == 0 ? " (no statement matched)" : "") << "\n";
    return kExitFailure;
  }
  ctx.out << verified << " statement" << (verified == 1 ? "" : "s") << " verified for "
          << s->package.name() << "@" << s->package.digest << "\n";
  return kExitOk;
}

}  // namespace lockstep::cli
