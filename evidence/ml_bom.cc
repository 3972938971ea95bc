#include "evidence/ml_bom.h"

#include <map>
#include <sstream>

#include "evidence/purl.h"

namespace lockstep::evidence {
namespace {

using Json = nlohmann::ordered_json;

Json property(const std::string& name, const std::string& value) {
  return Json{{"name", name}, {"value", value}};
}

// "%.17g" round-trips a double; the shortest form reads better and nlohmann's
// serializer already finds it.
std::string number(double v) { return nlohmann::json(v).dump(); }

std::string lastPathComponent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return path.substr(slash == std::string::npos ? 0 : slash + 1);
}

// A digest "sha256:<hex>" as a CycloneDX hash, or nullopt for other digests
// (Nix store paths, git commits).
std::optional<Json> sha256Hash(const std::string& digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.rfind(kPrefix, 0) != 0 || digest.size() != kPrefix.size() + 64) return std::nullopt;
  return Json{{"alg", "SHA-256"}, {"content", digest.substr(kPrefix.size())}};
}

Json ociComponent(const std::string& type, const std::string& bomRef, const api::ImageRef& ref) {
  Json c;
  c["type"] = type;
  c["bom-ref"] = bomRef;
  c["name"] = ref.repository();
  if (!ref.tag.empty()) c["version"] = ref.tag;
  c["hashes"] = Json::array({*sha256Hash(ref.digest)});
  c["purl"] = ociPackageUrl(ref);
  return c;
}

std::string comparatorText(const MetricResult& m) {
  std::string out;
  if (m.min) out += ">= " + number(*m.min);
  if (m.max) out += std::string(out.empty() ? "" : ", ") + "<= " + number(*m.max);
  return out;
}

Json modelComponent(const MlBomInput& in) {
  Json c = ociComponent("machine-learning-model", kModelRef, in.package);
  c["name"] = in.modelName.empty() ? lastPathComponent(in.package.path) : in.modelName;
  c["properties"] = Json::array(
      {property("lockstep:package", in.package.repository() + "@" + in.package.digest)});
  const api::v1alpha1::PackageInfo* info =
      in.packageInfo && in.packageInfo->digest == in.package.digest ? &*in.packageInfo : nullptr;
  const api::v1alpha1::ModelPackConfig* model = info && info->model ? &*info->model : nullptr;
  if (info) {
    c["properties"].push_back(property("lockstep:package:kind", info->kind));
    c["properties"].push_back(property("lockstep:package:mediaType", info->mediaType));
    if (!info->artifactType.empty())
      c["properties"].push_back(property("lockstep:package:artifactType", info->artifactType));
  }
  if (model && !model->licenses.empty()) {
    Json licenses = Json::array();
    for (const std::string& l : model->licenses) licenses.push_back(Json{{"expression", l}});
    c["licenses"] = licenses;
  }
  Json metrics = Json::array();
  Json thresholds = Json::array();
  for (const GateResult& g : in.gates) {
    for (const MetricResult& m : g.metrics) {
      metrics.push_back(Json{{"type", m.name}, {"value", number(m.value)}, {"slice", g.stage}});
      if (m.min || m.max) {
        thresholds.push_back(
            property("lockstep:gate:" + g.stage + ":" + m.name + ":threshold", comparatorText(m)));
      }
      thresholds.push_back(property("lockstep:gate:" + g.stage + ":" + m.name + ":passed",
                                    m.passed() ? "true" : "false"));
    }
  }
  Json card;
  card["bom-ref"] = "model-card";
  if (model) {
    Json params = Json::object();
    if (!model->architecture.empty()) params["architectureFamily"] = model->architecture;
    if (!model->family.empty()) params["modelArchitecture"] = model->family;
    auto formats = [](const std::vector<std::string>& types) {
      Json out = Json::array();
      for (const std::string& t : types) out.push_back(Json{{"format", t}});
      return out;
    };
    if (!model->inputTypes.empty()) params["inputs"] = formats(model->inputTypes);
    if (!model->outputTypes.empty()) params["outputs"] = formats(model->outputTypes);
    if (!params.empty()) card["modelParameters"] = params;
    auto put = [&](const char* key, const std::string& value) {
      if (!value.empty())
        thresholds.push_back(property(std::string("lockstep:modelpack:") + key, value));
    };
    put("name", model->name);
    put("version", model->version);
    put("format", model->format);
    put("paramSize", model->paramSize);
    if (model->parameterCount) put("parameterCount", std::to_string(*model->parameterCount));
    put("precision", model->precision);
    put("quantization", model->quantization);
    put("configDigest", info->configDigest);
  }
  if (!metrics.empty()) card["quantitativeAnalysis"] = Json{{"performanceMetrics", metrics}};
  if (!thresholds.empty()) card["properties"] = thresholds;
  if (card.size() > 1) c["modelCard"] = card;
  return c;
}

Json libraryComponent(const closure::Package& p, const std::string& bomRef) {
  Json c;
  c["type"] = "library";
  c["bom-ref"] = bomRef;
  c["name"] = p.name;
  if (!p.version.empty()) c["version"] = p.version;
  Json hashes = Json::array();
  for (const std::string& d : p.digests) {
    if (auto h = sha256Hash(d)) hashes.push_back(*h);
  }
  if (!hashes.empty()) c["hashes"] = hashes;
  c["purl"] = packageUrl(p);
  Json props = Json::array({property("lockstep:closure:ecosystem", p.ecosystem)});
  for (const std::string& d : p.digests) props.push_back(property("lockstep:closure:digest", d));
  c["properties"] = props;
  return c;
}

Json gateWorkflow(const GateResult& g) {
  Json w;
  w["bom-ref"] = "gate-" + g.stage;
  w["uid"] = g.jobUid.empty() ? "stage/" + g.stage : g.jobUid;
  w["name"] = g.stage;
  std::ostringstream description;
  description << "gate stage " << g.stage << ": " << (g.passed() ? "passed" : "failed");
  for (const MetricResult& m : g.metrics) {
    description << "; " << m.name << " " << number(m.value);
    if (m.min || m.max) description << " (" << comparatorText(m) << ")";
  }
  w["description"] = description.str();
  w["taskTypes"] = Json::array({"test"});
  if (!g.command.empty()) {
    std::string executed;
    for (const std::string& a : g.command) executed += (executed.empty() ? "" : " ") + a;
    w["steps"] = Json::array(
        {Json{{"name", g.stage}, {"commands", Json::array({Json{{"executed", executed}}})}}});
  }
  w["inputs"] = Json::array({Json{{"resource", Json{{"ref", kModelRef}}}}});
  if (!g.startedAt.empty()) w["timeStart"] = g.startedAt;
  if (!g.finishedAt.empty()) w["timeEnd"] = g.finishedAt;
  Json props = Json::array();
  if (!g.image.empty()) props.push_back(property("lockstep:gate:image", g.image));
  if (!g.stageSpecDigest.empty())
    props.push_back(property("lockstep:gate:stageSpecDigest", g.stageSpecDigest));
  if (!props.empty()) w["properties"] = props;
  return w;
}

}  // namespace

StatusOr<nlohmann::ordered_json> makeMlBom(const MlBomInput& in) {
  if (in.closure == nullptr) return invalidArgument("ML-BOM: no closure");
  if (!api::isSha256Digest(in.package.digest)) {
    return invalidArgument("ML-BOM: package " + in.package.repository() +
                           " is not pinned by digest (@sha256:…)");
  }
  if (in.runtimeImage && !api::isSha256Digest(in.runtimeImage->digest)) {
    return invalidArgument("ML-BOM: runtime image " + in.runtimeImage->repository() +
                           " is not pinned by digest (@sha256:…)");
  }
  const closure::Closure& closure = *in.closure;

  Json bom;
  bom["bomFormat"] = "CycloneDX";
  bom["specVersion"] = kBomSpecVersion;
  bom["version"] = 1;
  Json metadata;
  if (!in.timestamp.empty()) metadata["timestamp"] = in.timestamp;
  Json tool{{"type", "application"}, {"name", "lockstep"}};
  if (!in.toolVersion.empty()) tool["version"] = in.toolVersion;
  metadata["tools"] = Json{{"components", Json::array({tool})}};
  metadata["component"] = modelComponent(in);
  Json props = Json::array({
      property("lockstep:closure:hash", closure.closureHash),
      property("lockstep:closure:format", std::string(closure::formatName(closure.format))),
      property("lockstep:closure:packageCount", std::to_string(closure.packageCount())),
  });
  if (!closure.platform.empty())
    props.push_back(property("lockstep:closure:platform", closure.platform));
  if (!closure.environment.empty())
    props.push_back(property("lockstep:closure:environment", closure.environment));
  if (closure.weak) props.push_back(property("lockstep:closure:weak", "true"));
  metadata["properties"] = props;
  bom["metadata"] = metadata;

  Json components = Json::array();
  if (in.runtimeImage) {
    Json image = ociComponent("container", kRuntimeImageRef, *in.runtimeImage);
    image["description"] = "the runtime image built from the closure";
    components.push_back(image);
  }
  // bom-refs are the purls, made unique for the rare lock that lists one name and
  // version twice with different artifacts (a canonical line each).
  std::map<std::string, int> seen;
  std::map<std::pair<std::string, std::string>, std::string> refByEntry;  // (name, version)
  Json libraryRefs = Json::array();
  for (const closure::Package& p : closure.packages) {
    std::string ref = packageUrl(p);
    if (int n = ++seen[ref]; n > 1) ref += "#" + std::to_string(n);
    components.push_back(libraryComponent(p, ref));
    libraryRefs.push_back(ref);
    refByEntry.emplace(std::make_pair(p.name, p.version), ref);
  }
  bom["components"] = components;

  // CycloneDX 1.6 vulnerabilities: the source is OSV, the rating the advisory's, and
  // `affects` the library component of the closure entry.
  if (!in.vulnerabilities.empty()) {
    Json vulnerabilities = Json::array();
    for (const BomVulnerability& v : in.vulnerabilities) {
      auto ref = refByEntry.find({v.package, v.version});
      if (ref == refByEntry.end()) {
        return invalidArgument("vulnerabilities: " + v.id + " names " + v.package + " " +
                               v.version + ", which is no entry of the closure");
      }
      Json rating = Json{{"severity", v.severity}};
      if (v.score >= 0) rating["score"] = v.score;
      Json entry = {{"bom-ref", "vuln-" + v.id + "-" + ref->second},
                    {"id", v.id},
                    {"source", {{"name", "OSV"}, {"url", "https://osv.dev/vulnerability/" + v.id}}},
                    {"ratings", Json::array({rating})}};
      if (!v.aliases.empty()) {
        Json refs = Json::array();
        for (const std::string& a : v.aliases)
          refs.push_back({{"id", a}, {"source", {{"name", "OSV"}}}});
        entry["references"] = refs;
      }
      if (!v.fixed.empty()) entry["recommendation"] = "upgrade " + v.package + " to " + v.fixed;
      entry["affects"] = Json::array(
          {{{"ref", ref->second},
            {"versions", Json::array({{{"version", v.version}, {"status", "affected"}}})}}});
      vulnerabilities.push_back(std::move(entry));
    }
    bom["vulnerabilities"] = std::move(vulnerabilities);
  }

  Json dependencies = Json::array();
  if (in.runtimeImage) {
    dependencies.push_back(
        Json{{"ref", kModelRef}, {"dependsOn", Json::array({kRuntimeImageRef})}});
    dependencies.push_back(Json{{"ref", kRuntimeImageRef}, {"dependsOn", libraryRefs}});
  } else {
    dependencies.push_back(Json{{"ref", kModelRef}, {"dependsOn", libraryRefs}});
  }
  bom["dependencies"] = dependencies;

  if (!in.gates.empty()) {
    Json workflows = Json::array();
    for (const GateResult& g : in.gates) workflows.push_back(gateWorkflow(g));
    bom["formulation"] = Json::array({Json{{"bom-ref", "formulation"}, {"workflows", workflows}}});
  }
  return bom;
}

}  // namespace lockstep::evidence
