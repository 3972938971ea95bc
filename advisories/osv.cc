#include "advisories/osv.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "advisories/cvss.h"

namespace lockstep::advisories {
namespace {

using json = nlohmann::json;

// Errors name the source and the field: "GHSA-x.json: affected[0].ranges[1].type: ...".
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Status error(const std::string& field, const std::string& why) const {
    return invalidArgument(source_ + ": " + field + ": " + why);
  }

  // An optional string member; absent or null is "".
  StatusOr<std::string> str(const json& obj, const char* key, const std::string& field) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::string();
    if (!it->is_string()) return error(field + "." + key, "expected a string");
    return it->get<std::string>();
  }

  StatusOr<std::vector<std::string>> strings(const json& obj, const char* key,
                                             const std::string& field) const {
    std::vector<std::string> out;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return out;
    if (!it->is_array()) return error(field + "." + key, "expected an array of strings");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_string()) {
        return error(field + "." + key + "[" + std::to_string(i) + "]", "expected a string");
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  }

  // A "severity" string inside an object member such as database_specific (other
  // shapes are the database's business and ignored).
  static std::string severityWord(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_object()) return "";
    auto s = it->find("severity");
    if (s == it->end() || !s->is_string()) return "";
    return s->get<std::string>();
  }

  StatusOr<std::vector<OsvSeverity>> severities(const json& obj, const std::string& field) const {
    std::vector<OsvSeverity> out;
    auto it = obj.find("severity");
    if (it == obj.end() || it->is_null()) return out;
    if (!it->is_array()) return error(field + "severity", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string f = field + "severity[" + std::to_string(i) + "]";
      const json& s = (*it)[i];
      if (!s.is_object()) return error(f, "expected an object");
      auto type = str(s, "type", f);
      if (!type.isOk()) return type.status();
      auto score = str(s, "score", f);
      if (!score.isOk()) return score.status();
      out.push_back(OsvSeverity{*type, *score});
    }
    return out;
  }

  StatusOr<OsvRange> range(const json& r, const std::string& f) const {
    if (!r.is_object()) return error(f, "expected an object");
    OsvRange out;
    auto type = str(r, "type", f);
    if (!type.isOk()) return type.status();
    if (type->empty()) return error(f + ".type", "missing");
    out.typeName = *type;
    out.type = *type == "ECOSYSTEM" ? RangeType::kEcosystem
               : *type == "SEMVER"  ? RangeType::kSemver
               : *type == "GIT"     ? RangeType::kGit
                                    : RangeType::kOther;
    auto ev = r.find("events");
    if (ev == r.end() || !ev->is_array()) return error(f + ".events", "expected an array");
    for (size_t k = 0; k < ev->size(); ++k) {
      const std::string ef = f + ".events[" + std::to_string(k) + "]";
      const json& e = (*ev)[k];
      if (!e.is_object()) return error(ef, "expected an object");
      static constexpr std::pair<const char*, OsvEvent::Kind> kKinds[] = {
          {"introduced", OsvEvent::Kind::kIntroduced},
          {"fixed", OsvEvent::Kind::kFixed},
          {"last_affected", OsvEvent::Kind::kLastAffected},
          {"limit", OsvEvent::Kind::kLimit}};
      int found = 0;
      OsvEvent event;
      for (const auto& [key, kind] : kKinds) {
        auto it = e.find(key);
        if (it == e.end()) continue;
        if (!it->is_string()) return error(ef + "." + key, "expected a string");
        ++found;
        event.kind = kind;
        event.version = it->get<std::string>();
      }
      if (found != 1) {
        return error(ef, "expected exactly one of introduced, fixed, last_affected, limit");
      }
      out.events.push_back(std::move(event));
    }
    return out;
  }

  StatusOr<OsvAffected> affected(const json& a, const std::string& f) const {
    if (!a.is_object()) return error(f, "expected an object");
    OsvAffected out;
    auto pkg = a.find("package");
    if (pkg != a.end() && !pkg->is_null()) {
      if (!pkg->is_object()) return error(f + ".package", "expected an object");
      auto eco = str(*pkg, "ecosystem", f + ".package");
      if (!eco.isOk()) return eco.status();
      auto name = str(*pkg, "name", f + ".package");
      if (!name.isOk()) return name.status();
      auto purl = str(*pkg, "purl", f + ".package");
      if (!purl.isOk()) return purl.status();
      out.ecosystem = *eco;
      out.name = *name;
      out.purl = *purl;
    }
    auto ranges = a.find("ranges");
    if (ranges != a.end() && !ranges->is_null()) {
      if (!ranges->is_array()) return error(f + ".ranges", "expected an array");
      for (size_t j = 0; j < ranges->size(); ++j) {
        auto r = range((*ranges)[j], f + ".ranges[" + std::to_string(j) + "]");
        if (!r.isOk()) return r.status();
        out.ranges.push_back(std::move(*r));
      }
    }
    auto versions = strings(a, "versions", f);
    if (!versions.isOk()) return versions.status();
    out.versions = std::move(*versions);
    auto sev = severities(a, f + ".");
    if (!sev.isOk()) return sev.status();
    out.severity = std::move(*sev);
    out.ecosystemSeverity = severityWord(a, "ecosystem_specific");
    out.databaseSeverity = severityWord(a, "database_specific");
    return out;
  }

  StatusOr<OsvRecord> record(const json& root) const {
    if (!root.is_object()) return error("(record)", "expected a JSON object");
    OsvRecord out;
    out.source = source_;
    auto id = str(root, "id", "");
    if (!id.isOk()) return error("id", "expected a string");
    if (id->empty()) return error("id", "missing");
    out.id = *id;
    auto aliases = strings(root, "aliases", "");
    if (!aliases.isOk()) return error("aliases", "expected an array of strings");
    out.aliases = std::move(*aliases);
    auto summary = str(root, "summary", "");
    if (!summary.isOk()) return error("summary", "expected a string");
    out.summary = *summary;
    auto modified = str(root, "modified", "");
    if (!modified.isOk()) return error("modified", "expected a string");
    out.modified = *modified;
    auto withdrawn = root.find("withdrawn");
    out.withdrawn = withdrawn != root.end() && !withdrawn->is_null();
    auto sev = severities(root, "");
    if (!sev.isOk()) return sev.status();
    out.severity = std::move(*sev);
    out.databaseSeverity = severityWord(root, "database_specific");
    auto aff = root.find("affected");
    if (aff != root.end() && !aff->is_null()) {
      if (!aff->is_array()) return error("affected", "expected an array");
      for (size_t i = 0; i < aff->size(); ++i) {
        auto a = affected((*aff)[i], "affected[" + std::to_string(i) + "]");
        if (!a.isOk()) return a.status();
        out.affected.push_back(std::move(*a));
      }
    }
    return out;
  }

 private:
  std::string source_;
};

// nlohmann's parser recurses once per nesting level: refuse deep nesting before it.
bool tooDeep(std::string_view text) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxRecordDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

size_t lineAt(std::string_view text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<size_t>(
                 std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
}

}  // namespace

StatusOr<OsvRecord> parseOsvRecord(std::string_view text, std::string_view source) {
  const std::string src(source);
  if (text.size() > kMaxRecordBytes) {
    return resourceExhausted(src + ": " + std::to_string(text.size()) +
                             " bytes; the limit for one OSV record is " +
                             std::to_string(kMaxRecordBytes));
  }
  if (tooDeep(text)) {
    return resourceExhausted(src + ": nested deeper than " + std::to_string(kMaxRecordDepth) +
                             " levels");
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return invalidArgument(src + ":" + std::to_string(lineAt(text, e.byte == 0 ? 0 : e.byte - 1)) +
                           ": not JSON: " + e.what());
  } catch (const json::exception& e) {
    // The parser's other errors (out_of_range 406: a number such as 1e7097 that no double
    // holds) carry no position.
    return invalidArgument(src + ": not JSON: " + e.what());
  }
  return Reader(source).record(root);
}

RatedSeverity rateSeverity(const OsvRecord& record, const OsvAffected* affected) {
  std::vector<const std::vector<OsvSeverity>*> lists;
  if (affected != nullptr) lists.push_back(&affected->severity);
  lists.push_back(&record.severity);
  bool onlyV4 = false;
  std::string badVector;
  for (const char* type : {"CVSS_V3", "CVSS_V2"}) {
    for (const auto* list : lists) {
      for (const OsvSeverity& s : *list) {
        if (s.type == "CVSS_V4") onlyV4 = true;
        if (s.type != type) continue;
        auto score = s.type == "CVSS_V3" ? cvss3BaseScore(s.score) : cvss2BaseScore(s.score);
        if (score.isOk()) return RatedSeverity{score->rating, score->baseScore, s.score};
        badVector = score.status().message();
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> words;
  if (affected != nullptr) {
    words.emplace_back("affected.ecosystem_specific.severity", affected->ecosystemSeverity);
    words.emplace_back("affected.database_specific.severity", affected->databaseSeverity);
  }
  words.emplace_back("database_specific.severity", record.databaseSeverity);
  for (const auto& [where, word] : words) {
    if (word.empty()) continue;
    auto s = parseSeverity(word);
    if (s.isOk()) return RatedSeverity{*s, -1, where + " " + word};
  }
  if (!badVector.empty()) return RatedSeverity{Severity::kUnknown, -1, badVector};
  if (onlyV4) return RatedSeverity{Severity::kUnknown, -1, "only a CVSS v4 vector (not scored)"};
  return RatedSeverity{Severity::kUnknown, -1, "no severity in the record"};
}

}  // namespace lockstep::advisories
