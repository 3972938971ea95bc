// The ML-BOM of a release: CycloneDX 1.6 JSON (https://cyclonedx.org/docs/1.6/json/)
// built from the runtime closure that the closure hash covers, so that
// `lockstep closure-hash --explain` and the BOM list the same packages:
//   - metadata.component: the model package, a `machine-learning-model`, with a
//     model card carrying the gate metrics (and their thresholds) when given,
//     and what the package's manifest says (the release's status.package): its
//     kind, and for a ModelPack model its config — architecture as
//     modelParameters.architectureFamily, family as modelArchitecture, input and
//     output types as inputs/outputs formats, format, paramSize, parameter count,
//     precision and quantization as model card properties `lockstep:modelpack:*`,
//     licenses as the component's SPDX expressions;
//   - components: the runtime image (`container`, by digest) when given, and one
//     `library` per closure package with its version, hashes and purl;
//   - formulation: one workflow per gate (how the model was evaluated).
// Every closure entry is recoverable from the BOM (docs/evidence.md): properties
// `lockstep:closure:ecosystem` and one `lockstep:closure:digest` per digest, as
// the canonical text spells them; sha256 digests are also `hashes`.
// Pure: the caller hands in the closure, the references and the time.
// Thread-safety: free functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "api/image_ref.h"
#include "api/v1alpha1/model_package.h"
#include "closure/closure.h"
#include "common/status.h"
#include "evidence/gate_result.h"

namespace lockstep::evidence {

inline constexpr char kBomSpecVersion[] = "1.6";
// bom-refs of the fixed components.
inline constexpr char kModelRef[] = "model";
inline constexpr char kRuntimeImageRef[] = "runtime-image";

// An advisory that affects a closure entry (RuntimeEnv status.advisories): a CycloneDX
// `vulnerabilities` entry whose `affects` names the library component of that entry.
struct BomVulnerability {
  std::string id;                    // "GHSA-h5c8-rqwp-cp95"
  std::vector<std::string> aliases;  // other ids of it (PYSEC-…, CVE-…)
  std::string package, version;      // the closure entry (normalized name, locked version)
  std::string severity;              // critical | high | medium | low | none | unknown
  double score = -1;                 // CVSS base score; < 0: none
  std::string fixed;                 // a fixing version; "" when none is known
};

struct MlBomInput {
  api::ImageRef package;                      // the model package; must be pinned by digest
  std::string modelName;                      // default: the repository's last path component
  const closure::Closure* closure = nullptr;  // required
  std::optional<api::ImageRef> runtimeImage;  // must be pinned by digest when given
  std::vector<GateResult> gates;              // model card metrics and formulation
  std::string timestamp;                      // RFC 3339; empty leaves metadata.timestamp out
  std::string toolVersion;                    // the lockstep version, for metadata.tools
  // Advisories known when the BOM is made; one naming no closure entry is an error.
  std::vector<BomVulnerability> vulnerabilities;
  // The package's description (status.package); used when its digest is the package's.
  std::optional<api::v1alpha1::PackageInfo> packageInfo;
};

// The BOM; kInvalidArgument naming the field for an unpinned package or image.
StatusOr<nlohmann::ordered_json> makeMlBom(const MlBomInput& in);

}  // namespace lockstep::evidence
