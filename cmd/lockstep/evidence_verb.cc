// `lockstep evidence`: evidence about a model package made and checked offline.
//   bom:           the ML-BOM (CycloneDX 1.6) of a package from its runtime's lock alone;
//   sign:          an in-toto statement signed into a Sigstore bundle (DSSE, ECDSA P-256);
//   verify-bundle: a bundle checked against trusted keys, a subject, a stage and a spec.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <ostream>

#include "advisories/osv_export.h"
#include "advisories/severity.h"
#include "api/image_ref.h"
#include "closure/closure.h"
#include "cmd/lockstep/evidence_registry.h"
#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/path_names.h"
#include "cmd/lockstep/verbs.h"
#include "cmd/lockstep/verifier_trust.h"
#include "common/flags.h"
#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/ml_bom.h"
#include "evidence/statement.h"
#include "evidence/verify.h"

namespace lockstep::cli {
namespace {

// RFC 3339 UTC. SOURCE_DATE_EPOCH (reproducible-builds.org) fixes it for pipelines
// that want the same BOM from the same lock.
std::string nowRfc3339() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    t = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int runBom(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(
      {
          {"lock", "", "the runtime's lock file"},
          {"package", "", "the model package, REPOSITORY@sha256:…"},
          {"image", "", "the runtime image, REPOSITORY@sha256:…"},
          {"model", "", "the model's name (default: the package repository's last component)"},
          {"format", "", "lock format (default: detect)"},
          {"platform", "", "per-platform locks: the platform"},
          {"environment", "", "pixi environment"},
          {"allow-unhashed", "false", "keep packages without digests", FlagType::kBool},
          {"osv", "",
           "a local OSV export (directory or all.zip): the advisories that affect the closure "
           "become the BOM's vulnerabilities"},
      },
      /*maxPositional=*/0);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence bom", args)) return *rc;
  if (flags.get("lock").empty() || flags.get("package").empty()) {
    ctx.err << "evidence bom: --lock and --package are required\n";
    return kExitUsage;
  }
  auto package = api::parseImageRef(flags.get("package"));
  if (!package.isOk()) {
    ctx.err << "evidence bom: --package: " << package.status().message() << "\n";
    return kExitUsage;
  }
  std::optional<api::ImageRef> image;
  if (!flags.get("image").empty()) {
    auto parsed = api::parseImageRef(flags.get("image"));
    if (!parsed.isOk()) {
      ctx.err << "evidence bom: --image: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    image = *parsed;
  }

  closure::ClosureOptions options;
  if (std::string f = flags.get("format"); !f.empty()) {
    auto fmt = closure::parseFormatName(f);
    if (!fmt.isOk()) {
      ctx.err << "evidence bom: " << fmt.status().message() << "\n";
      return kExitUsage;
    }
    options.format = *fmt;
  }
  options.platform = flags.get("platform");
  options.environment = flags.get("environment");
  options.allowUnhashed = flags.getBool("allow-unhashed");
  const std::string file = flags.get("lock");
  auto text = readFile(file, options.limits.maxBytes);
  if (!text.isOk()) {
    ctx.err << "evidence bom: " << text.status().message() << "\n";
    return kExitFailure;
  }
  FileIncludeReader includes(file == "-" ? "." : dirName(file));
  options.includes = &includes;
  options.sourceName = file == "-" ? "stdin" : baseName(file);
  // The same computation as `closure-hash`: the BOM lists what the hash covers.
  auto closure = closure::computeClosure(*text, options);
  if (!closure.isOk()) {
    ctx.err << "evidence bom: " << closure.status().message() << "\n";
    return kExitFailure;
  }

  evidence::MlBomInput in;
  in.package = *package;
  in.modelName = flags.get("model");
  in.closure = &*closure;
  in.runtimeImage = image;
  in.timestamp = nowRfc3339();
  in.toolVersion = LOCKSTEP_VERSION;
  if (std::string osv = flags.get("osv"); !osv.empty()) {
    auto loaded = advisories::loadOsvExport(osv);
    if (!loaded.isOk()) {
      ctx.err << "evidence bom: --osv: " << loaded.status().message() << "\n";
      return kExitFailure;
    }
    for (const advisories::Finding& f : loaded->index.match(closure->packages).findings) {
      evidence::BomVulnerability v;
      v.id = f.id;
      for (const std::string& id : f.ids)
        if (id != f.id) v.aliases.push_back(id);
      v.aliases.insert(v.aliases.end(), f.aliases.begin(), f.aliases.end());
      v.package = f.package.name;
      v.version = f.package.version;
      v.severity = std::string(advisories::severityName(f.severity.severity));
      v.score = f.severity.score;
      v.fixed = f.fixed;
      in.vulnerabilities.push_back(std::move(v));
    }
  }
  auto bom = evidence::makeMlBom(in);
  if (!bom.isOk()) {
    ctx.err << "evidence bom: " << bom.status().message() << "\n";
    return kExitUsage;
  }
  ctx.out << bom->dump(2) << "\n";
  return kExitOk;
}

constexpr size_t kMaxEvidenceBytes = size_t{16} << 20;

int runSign(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags({{"key", "", "the signing key: an unencrypted P-256 private key, PEM"}},
              /*maxPositional=*/1);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence sign", args)) return *rc;
  if (flags.get("key").empty() || flags.positional().empty()) {
    ctx.err << "evidence sign: --key and a STATEMENT file are required\n";
    return kExitUsage;
  }
  auto pem = readFile(flags.get("key"), kMaxEvidenceBytes);
  if (!pem.isOk()) {
    ctx.err << "evidence sign: " << pem.status().message() << "\n";
    return kExitFailure;
  }
  auto signer = evidence::parseP256PrivateKey(*pem, flags.get("key"));
  if (!signer.isOk()) {
    ctx.err << "evidence sign: " << signer.status().message() << "\n";
    return kExitFailure;
  }
  const std::string file = flags.positional()[0];
  auto statement = readFile(file, kMaxEvidenceBytes);
  if (!statement.isOk()) {
    ctx.err << "evidence sign: " << statement.status().message() << "\n";
    return kExitFailure;
  }
  const nlohmann::json parsed = nlohmann::json::parse(*statement, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() ||
      parsed.value("_type", "") != evidence::kStatementType) {
    ctx.err << "evidence sign: " << file << ": not an in-toto Statement v1 (_type "
            << evidence::kStatementType << ")\n";
    return kExitFailure;
  }
  // The file's bytes are the payload, as they are: what was written is what is signed.
  auto bundle = evidence::signStatement(*statement, **signer);
  if (!bundle.isOk()) {
    ctx.err << "evidence sign: " << bundle.status().message() << "\n";
    return kExitFailure;
  }
  ctx.out << bundle->dump() << "\n";
  return kExitOk;
}

int runVerifyBundle(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(
      {
          {"key", "", "trusted public keys, PEM files, comma-separated"},
          {"subject", "", "the package digest the statement must be about, sha256:…"},
          {"stage", "", "the stage the statement must be for"},
          {"spec-digest", "", "the stage spec digest the verdict must be for, sha256:…"},
          {"predicate",
           "any",
           "the predicate the statement must have",
           FlagType::kChoice,
           {"any", "eval", "decision"}},
      },
      /*maxPositional=*/1);
  if (auto rc = parseEvidenceFlags(ctx, flags, "evidence verify-bundle", args)) return *rc;
  if (flags.get("key").empty() || flags.get("subject").empty() || flags.positional().empty()) {
    ctx.err << "evidence verify-bundle: --key, --subject and a BUNDLE file are required\n";
    return kExitUsage;
  }
  if (!api::isSha256Digest(flags.get("subject"))) {
    ctx.err << "evidence verify-bundle: --subject: \"" << flags.get("subject")
            << "\" is not sha256:<64 lowercase hex>\n";
    return kExitUsage;
  }
  auto keys = readTrustedKeys(flags.get("key"));
  if (!keys.isOk()) {
    ctx.err << "evidence verify-bundle: " << keys.status().message() << "\n";
    return kExitFailure;
  }
  evidence::Expectation want;
  want.subjectDigest = flags.get("subject");
  want.stage = flags.get("stage");
  want.stageSpecDigest = flags.get("spec-digest");
  if (flags.get("predicate") == "eval") want.predicateType = evidence::kTestResultPredicate;
  if (flags.get("predicate") == "decision") {
    want.predicateType = evidence::kVerificationSummaryPredicate;
  }
  const std::string file = flags.positional()[0];
  auto text = readFile(file, kMaxEvidenceBytes);
  if (!text.isOk()) {
    ctx.err << "evidence verify-bundle: " << text.status().message() << "\n";
    return kExitFailure;
  }
  auto v = evidence::verifyBundle(*text, *keys, want, file);
  if (!v.isOk()) {
    ctx.err << "evidence verify-bundle: refused: " << v.status().message() << "\n";
    return kExitFailure;
  }
  ctx.out << "verified: " << v->predicateType << " for " << want.subjectDigest << ", stage \""
          << v->stage << "\", spec " << v->stageSpecDigest << ", signed by " << v->keyName << "\n";
  return kExitOk;
}

}  // namespace

void evidenceUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " evidence bom --lock FILE --package REPOSITORY@sha256:… [--image REF]\n"
        "                [--model NAME] [--format F] [--platform P] [--environment E]\n"
        "                [--allow-unhashed]\n"
        "\n"
        "bom: prints the ML-BOM (CycloneDX 1.6 JSON) of a model package from its runtime's\n"
        "     lock alone: the model, every package of the closure that `closure-hash` hashes\n"
        "     (version, hashes, purl), and the runtime image when given. No cluster needed.\n"
        "     metadata.timestamp is the current time, or SOURCE_DATE_EPOCH when set.\n"
        "\n"
        "       "
     << program
     << " evidence sign --key PRIVATE.pem STATEMENT.json\n"
        "sign: prints the Sigstore bundle (v0.3, DSSE, ECDSA P-256) of an in-toto statement.\n"
        "\n"
        "       "
     << program
     << " evidence verify-bundle --key PUB.pem[,PUB2.pem] --subject sha256:…\n"
        "                [--stage S] [--spec-digest sha256:…] [--predicate eval|decision] BUNDLE\n"
        "verify-bundle: exit 0 when a trusted key signed a passing statement about the subject\n"
        "     (for the stage and stage spec when given), else 1 with the reason. Offline.\n"
        "\n"
        "       "
     << program
     << " evidence list PACKAGE [-o table|json]\n"
        "       "
     << program
     << " evidence get PACKAGE --statement NAME|--referrer DIGEST [--bundle]\n"
        "       "
     << program
     << " evidence verify PACKAGE --key PUB.pem[,…]|--policy TRUSTPOLICY.yaml [--stage S]\n"
        "                [--spec-digest sha256:…]\n"
        "                [--predicate any|eval|decision|prod]\n"
        "list, get, verify: the signed statements published as OCI referrers of PACKAGE\n"
        "     (REGISTRY/REPOSITORY@sha256:…), read from its registry (the referrers API, else\n"
        "     the sha256-<hex> tag). verify: exit 0 when every matching statement verifies with\n"
        "     a trusted key and at least one does; each refusal says why. --policy: the keys\n"
        "     a TrustPolicy (kubectl get trustpolicies -o yaml) trusts for the package's\n"
        "     repository and each statement's stage. get prints the\n"
        "     statement unverified. Registry flags: --authfile FILE (docker config; default\n"
        "     $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json),\n"
        "     --cert-dir DIR (*.crt CA certificates; default the system roots).\n"
        "See docs/evidence.md.\n";
}

int runEvidence(const VerbContext& ctx) {
  if (ctx.args.empty() || ctx.args[0] == "-h" || ctx.args[0] == "--help" || ctx.args[0] == "help") {
    evidenceUsage(ctx.args.empty() ? ctx.err : ctx.out, ctx.programName);
    return ctx.args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(ctx.args.begin() + 1, ctx.args.end());
  if (ctx.args[0] == "bom") return runBom(ctx, rest);
  if (ctx.args[0] == "sign") return runSign(ctx, rest);
  if (ctx.args[0] == "verify-bundle") return runVerifyBundle(ctx, rest);
  if (ctx.args[0] == "list") return runEvidenceList(ctx, rest);
  if (ctx.args[0] == "get") return runEvidenceGet(ctx, rest);
  if (ctx.args[0] == "verify") return runEvidenceVerify(ctx, rest);
  ctx.err << "evidence: unknown command \"" << ctx.args[0] << "\"\n";
  evidenceUsage(ctx.err, ctx.programName);
  return kExitUsage;
}

}  // namespace lockstep::cli
