#include "cmd/lockstep/manifest_file.h"

#include <cerrno>
#include <cstdlib>
#include <regex>

#include "closure/yaml_tree.h"
#include "cmd/lockstep/file_include_reader.h"

namespace lockstep::cli {
namespace {

using closure::internal::YamlNode;
using closure::internal::YamlTree;
using nlohmann::json;

// A manifest is small; these bound what a hostile one may cost.
constexpr size_t kMaxManifestBytes = size_t{4} << 20;
constexpr size_t kMaxManifestNodes = 100000;

// A plain scalar's value by YAML 1.2's core schema (what sigs.k8s.io/yaml gives
// the API server for the common cases): booleans, integers, floats, else text.
json plainScalar(std::string_view text) {
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  const std::string s(text);
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, kInt)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end != nullptr && *end == '\0') return static_cast<int64_t>(v);
  }
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  return s;
}

json toJson(const YamlNode& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (auto [k, v] : closure::internal::entries(n)) {
      const std::string key(k.Scalar());
      if (!o.contains(key)) o[key] = toJson(v);  // the first of duplicate keys, as lookups
    }
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const YamlNode& item : closure::internal::items(n)) a.push_back(toJson(item));
    return a;
  }
  if (n.IsScalar()) return n.IsPlain() ? plainScalar(n.Scalar()) : json(std::string(n.Scalar()));
  return nullptr;
}

}  // namespace

ManifestFile::ManifestFile(ManifestFile&&) noexcept = default;
ManifestFile& ManifestFile::operator=(ManifestFile&&) noexcept = default;
ManifestFile::~ManifestFile() = default;

StatusOr<ManifestFile> ManifestFile::parse(std::string_view text, const std::string& source) {
  // JSON is YAML (flow style): one reader for both, and lines for both.
  auto tree = YamlTree::parse(text, source, kMaxManifestNodes);
  if (!tree.isOk()) return tree.status();
  ManifestFile m;
  m.source_ = source;
  m.tree_ = std::make_unique<YamlTree>(std::move(*tree));
  m.json_ = toJson(m.tree_->root());
  return m;
}

StatusOr<ManifestFile> ManifestFile::read(const std::string& path) {
  auto text = readFile(path, kMaxManifestBytes);
  if (!text.isOk()) return text.status();
  return parse(*text, path == "-" ? "stdin" : path);
}

std::string ManifestFile::at(const std::string& path) const {
  YamlNode node = tree_ ? tree_->root() : YamlNode();
  int line = 0;
  // Walk "a.b[2].c": names between dots, each with any number of [index] suffixes.
  size_t i = 0;
  while (node && i <= path.size()) {
    if (node.line() > 0) line = node.line();
    if (i == path.size()) break;
    if (path[i] == '.') {
      ++i;
      continue;
    }
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) break;
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) break;
      const size_t index = std::stoul(digits);
      node = node.IsSequence() && index < node.childCount() ? node.child(index) : YamlNode();
      i = close + 1;
      continue;
    }
    const size_t end = path.find_first_of(".[", i);
    const std::string name = path.substr(i, end == std::string::npos ? end : end - i);
    node = node.IsMap() ? node[name] : YamlNode();
    i = end == std::string::npos ? path.size() : end;
  }
  return line > 0 ? source_ + ":" + std::to_string(line) : source_;
}

std::string ManifestFile::locate(const std::string& message) const {
  // "spec.waves[1].clusters[0]", "spec.inventory[0].labels.lockstep.dev/fleet".
  static const std::regex kField("[A-Za-z][^\\s:\"]*");
  const size_t colon = message.find(": ");
  if (colon != std::string::npos && std::regex_match(message.substr(0, colon), kField))
    return at(message.substr(0, colon)) + ": " + message;
  return source_ + ": " + message;
}

}  // namespace lockstep::cli
