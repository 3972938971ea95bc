// The YAML adapter: libyaml's event parser feeds a YamlTree. libyaml is C and
// throws nothing; its errors become statuses here.
//
// Why libyaml and not yaml-cpp's event parser (which the rest of the code base
// keeps): yaml-cpp's scanner matches every character against small regular
// expressions and was 78 % of the time spent on a conda-lock; libyaml's
// scanner is several times faster (docs/benchmarks.md, "Closure parsing").
//
// The tree is yaml-cpp's, node for node (tests/closure/yaml_tree_test.cc
// compares the two): a plain, untagged "", "~", "null", "Null" or "NULL" is a
// null node, anything quoted or tagged is a scalar; tags are otherwise
// ignored; merge keys ("<<") are ordinary keys; only the first document is
// read. Where the libraries differ on bad input (libyaml rejects invalid
// UTF-8 and control characters that yaml-cpp passed through), the lock is
// refused with a line, never hashed differently.
#include "closure/yaml_tree.h"

#include <yaml.h>

#include <algorithm>
#include <unordered_map>

#include "closure/lock_parsers.h"

namespace lockstep::closure::internal {
namespace {

// Maps with more keys than this get a sorted index.
constexpr size_t kIndexedMapKeys = 8;

int lineOfMark(const yaml_mark_t& m) { return static_cast<int>(m.line) + 1; }

// yaml-cpp's rule for a null node (IsNullString on an untagged plain scalar).
bool isNullScalar(const yaml_event_t& e) {
  if (e.data.scalar.tag != nullptr || e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const std::string_view v(reinterpret_cast<const char*>(e.data.scalar.value),
                           e.data.scalar.length);
  return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
}

// Owns one libyaml parser or event for the scope.
struct Parser {
  yaml_parser_t p;
  Parser() { yaml_parser_initialize(&p); }
  ~Parser() { yaml_parser_delete(&p); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};
struct Event {
  yaml_event_t e{};
  Event() = default;
  ~Event() { yaml_event_delete(&e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

}  // namespace

class YamlBuilder {
 public:
  YamlBuilder(YamlTree& tree, std::string_view text, const std::string& source, size_t maxNodes)
      : tree_(tree), text_(text), source_(source), maxNodes_(maxNodes) {}

  Status build() {
    Parser parser;
    yaml_parser_set_input_string(&parser.p, reinterpret_cast<const unsigned char*>(text_.data()),
                                 text_.size());
    for (;;) {
      Event ev;
      if (!yaml_parser_parse(&parser.p, &ev.e)) return syntaxError(parser.p);
      const yaml_event_t& e = ev.e;
      const int line = lineOfMark(e.start_mark);
      switch (e.type) {
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT:  // only the first document is read
          return Status::ok();
        case YAML_NO_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT:
          break;
        case YAML_SCALAR_EVENT: {
          if (isNullScalar(e)) {
            LOCKSTEP_RETURN_IF_ERROR(add(YamlTree::Type::kNull, line, e.data.scalar.anchor));
          } else {
            LOCKSTEP_RETURN_IF_ERROR(add(YamlTree::Type::kScalar, line, e.data.scalar.anchor));
            tree_.nodes_.back().scalar.assign(reinterpret_cast<const char*>(e.data.scalar.value),
                                              e.data.scalar.length);
          }
          break;
        }
        case YAML_ALIAS_EVENT:
          LOCKSTEP_RETURN_IF_ERROR(alias(line, e.data.alias.anchor));
          break;
        case YAML_SEQUENCE_START_EVENT:
          LOCKSTEP_RETURN_IF_ERROR(
              add(YamlTree::Type::kSequence, line, e.data.sequence_start.anchor, false));
          open_.push_back(static_cast<uint32_t>(tree_.nodes_.size() - 1));
          break;
        case YAML_MAPPING_START_EVENT:
          LOCKSTEP_RETURN_IF_ERROR(
              add(YamlTree::Type::kMap, line, e.data.mapping_start.anchor, false));
          open_.push_back(static_cast<uint32_t>(tree_.nodes_.size() - 1));
          break;
        case YAML_SEQUENCE_END_EVENT:
          close();
          break;
        case YAML_MAPPING_END_EVENT:
          indexMap(tree_.nodes_[open_.back()]);
          close();
          break;
      }
    }
  }

 private:
  Status error(int line, std::string_view reason, Code code = Code::kInvalidArgument) const {
    return errorAt(source_, line, "yaml", reason, code);
  }

  Status syntaxError(const yaml_parser_t& p) const {
    std::string reason = p.problem != nullptr ? p.problem : "malformed YAML";
    if (p.context != nullptr) reason = std::string(p.context) + ": " + reason;
    // Reader errors (bad encoding, control characters) carry an offset, not a mark.
    const int line = p.error == YAML_READER_ERROR ? lineOfOffset(text_, p.problem_offset)
                                                  : lineOfMark(p.problem_mark);
    return error(line, reason);
  }

  // Every node and every alias counts as the number of nodes it stands for.
  Status count(uint64_t nodes, int line) {
    total_ += nodes;
    if (total_ > maxNodes_) {
      return error(line,
                   "more than " + std::to_string(maxNodes_) +
                       " nodes (aliases count as the nodes they repeat)",
                   Code::kResourceExhausted);
    }
    return Status::ok();
  }

  Status add(YamlTree::Type type, int line, const yaml_char_t* anchor, bool closed = true) {
    LOCKSTEP_RETURN_IF_ERROR(count(1, line));
    const auto i = static_cast<uint32_t>(tree_.nodes_.size());
    YamlTree::Node& n = tree_.nodes_.emplace_back();
    n.type = type;
    n.closed = closed;
    n.line = line;
    expanded_.push_back(1);
    if (anchor != nullptr) anchors_[reinterpret_cast<const char*>(anchor)] = i;
    attach(i);
    return Status::ok();
  }

  Status alias(int line, const yaml_char_t* anchor) {
    auto it = anchors_.find(reinterpret_cast<const char*>(anchor));
    if (it == anchors_.end()) return error(line, "unknown alias");
    const uint32_t target = it->second;
    if (!tree_.nodes_[target].closed)
      return error(line, "alias refers to a node that contains it (a cycle)");
    LOCKSTEP_RETURN_IF_ERROR(count(expanded_[target], line));
    attach(target);
    return Status::ok();
  }

  void attach(uint32_t i) {
    if (open_.empty()) return;  // the root
    tree_.nodes_[open_.back()].kids.push_back(i);
  }

  void indexMap(YamlTree::Node& n) const {
    if (n.kids.size() / 2 <= kIndexedMapKeys) return;
    const auto& nodes = tree_.nodes_;
    for (uint32_t k = 0; k + 1 < n.kids.size(); k += 2) {
      if (nodes[n.kids[k]].type == YamlTree::Type::kScalar) n.index.push_back(k);
    }
    std::stable_sort(n.index.begin(), n.index.end(), [&](uint32_t a, uint32_t b) {
      return nodes[n.kids[a]].scalar < nodes[n.kids[b]].scalar;
    });
  }

  void close() {
    const uint32_t i = open_.back();
    open_.pop_back();
    tree_.nodes_[i].closed = true;
    uint64_t size = 1;
    for (uint32_t k : tree_.nodes_[i].kids) size += expanded_[k];
    expanded_[i] = size;
  }

  YamlTree& tree_;
  const std::string_view text_;
  const std::string& source_;
  const size_t maxNodes_;
  uint64_t total_ = 0;
  std::vector<uint64_t> expanded_;  // per node: nodes in its subtree, aliases expanded
  std::vector<uint32_t> open_;      // containers being built, innermost last
  std::unordered_map<std::string, uint32_t> anchors_;
};

StatusOr<YamlTree> YamlTree::parse(std::string_view text, const std::string& source,
                                   size_t maxNodes) {
  YamlTree tree;
  YamlBuilder builder(tree, text, source, maxNodes);
  LOCKSTEP_RETURN_IF_ERROR(builder.build());
  return tree;
}
bool YamlNode::IsNull() const {
  return tree_ && tree_->nodes_[index_].type == YamlTree::Type::kNull;
}
bool YamlNode::IsScalar() const {
  return tree_ && tree_->nodes_[index_].type == YamlTree::Type::kScalar;
}
bool YamlNode::IsSequence() const {
  return tree_ && tree_->nodes_[index_].type == YamlTree::Type::kSequence;
}
bool YamlNode::IsMap() const { return tree_ && tree_->nodes_[index_].type == YamlTree::Type::kMap; }

const std::string& YamlNode::Scalar() const {
  static const std::string kEmpty;
  return IsScalar() ? tree_->nodes_[index_].scalar : kEmpty;
}

int YamlNode::line() const { return tree_ ? tree_->nodes_[index_].line : 0; }

size_t YamlNode::childCount() const { return tree_ ? tree_->nodes_[index_].kids.size() : 0; }

YamlNode YamlNode::child(size_t i) const { return YamlNode(tree_, tree_->nodes_[index_].kids[i]); }

YamlNode YamlNode::operator[](std::string_view key) const {
  if (!IsMap()) return {};
  const auto& nodes = tree_->nodes_;
  const YamlTree::Node& n = nodes[index_];
  auto keyOf = [&](uint32_t k) -> const YamlTree::Node& { return nodes[n.kids[k]]; };
  if (!n.index.empty()) {
    auto it =
        std::lower_bound(n.index.begin(), n.index.end(), key,
                         [&](uint32_t k, std::string_view want) { return keyOf(k).scalar < want; });
    if (it != n.index.end() && keyOf(*it).scalar == key) return YamlNode(tree_, n.kids[*it + 1]);
    return {};
  }
  for (uint32_t k = 0; k + 1 < n.kids.size(); k += 2) {
    if (keyOf(k).type == YamlTree::Type::kScalar && keyOf(k).scalar == key) {
      return YamlNode(tree_, n.kids[k + 1]);
    }
  }
  return {};
}

std::vector<YamlNode> items(const YamlNode& sequence) {
  std::vector<YamlNode> out;
  if (!sequence.IsSequence()) return out;
  out.reserve(sequence.childCount());
  for (size_t i = 0; i < sequence.childCount(); ++i) out.push_back(sequence.child(i));
  return out;
}

std::vector<std::pair<YamlNode, YamlNode>> entries(const YamlNode& map) {
  std::vector<std::pair<YamlNode, YamlNode>> out;
  if (!map.IsMap()) return out;
  out.reserve(map.childCount() / 2);
  for (size_t i = 0; i + 1 < map.childCount(); i += 2) {
    out.emplace_back(map.child(i), map.child(i + 1));
  }
  return out;
}

}  // namespace lockstep::closure::internal
