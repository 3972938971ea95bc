// A Kubernetes manifest the CLI reads from a file (a ModelRollout, a
// TrustPolicy as `kubectl get … -o yaml` prints it): YAML or JSON, the first
// document, with YAML's types resolved as the API server would see them
// (`1` an integer, `"1"` a string, `true` a boolean), and each field's line,
// so an error can say "rollout.yaml:14: spec.waves[1].clusters[0]: …".
// Read with closure's YamlTree (bounded: aliases count as what they repeat).
// Thread-safety: a value; const methods may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::closure::internal {
class YamlTree;
}

namespace lockstep::cli {

class ManifestFile {
 public:
  // kInvalidArgument "<source>:<line>: yaml: <reason>" for text that is not YAML.
  static StatusOr<ManifestFile> parse(std::string_view text, const std::string& source);
  // parse() of a file's bytes ("-": standard input); the source is the path.
  static StatusOr<ManifestFile> read(const std::string& path);

  ManifestFile(ManifestFile&&) noexcept;
  ManifestFile& operator=(ManifestFile&&) noexcept;
  ~ManifestFile();

  const nlohmann::json& json() const { return json_; }
  const std::string& source() const { return source_; }

  // "<source>:<line>" of the field at `path` ("spec.waves[1].clusters[0]"), or of
  // the nearest enclosing field the file has; "<source>" when none.
  std::string at(const std::string& path) const;
  // `message` of a decoder that starts with the field it refuses
  // ("spec.strategy.maxFailures: …"), prefixed with where that field is.
  std::string locate(const std::string& message) const;

 private:
  ManifestFile() = default;
  std::string source_;
  std::unique_ptr<closure::internal::YamlTree> tree_;
  nlohmann::json json_;
};

}  // namespace lockstep::cli
