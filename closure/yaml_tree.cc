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
constexpr size_t kIndexedMapKeys = 16;

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
    // Real locks hold about one node per 14 bytes and less scalar text than bytes.
    const size_t expect = std::min(text_.size() / 12 + 16, maxNodes_ + 1);
    tree_.nodes_.reserve(expect);
    tree_.kids_.reserve(expect);
    expanded_.reserve(expect);
    tree_.scalars_.reserve(text_.size());
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
            YamlTree::Node& n = tree_.nodes_.back();
            n.plain =
                e.data.scalar.tag == nullptr && e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            n.begin = static_cast<uint32_t>(tree_.scalars_.size());
            n.size = static_cast<uint32_t>(e.data.scalar.length);
            tree_.scalars_.append(reinterpret_cast<const char*>(e.data.scalar.value),
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
          open(static_cast<uint32_t>(tree_.nodes_.size() - 1));
          break;
        case YAML_MAPPING_START_EVENT:
          LOCKSTEP_RETURN_IF_ERROR(
              add(YamlTree::Type::kMap, line, e.data.mapping_start.anchor, false));
          open(static_cast<uint32_t>(tree_.nodes_.size() - 1));
          break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
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
    tree_.nodes_.push_back({type, closed, /*plain=*/false, line});
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

  // Children of the open containers wait in pending_, innermost last; a
  // container's are moved to the tree's kids_ in one piece when it closes.
  void attach(uint32_t i) {
    if (open_.empty()) return;  // the root
    pending_.push_back(i);
  }

  void open(uint32_t i) { open_.push_back({i, pending_.size()}); }

  void close() {
    const auto [i, first] = open_.back();
    open_.pop_back();
    YamlTree::Node& n = tree_.nodes_[i];
    n.closed = true;
    n.begin = static_cast<uint32_t>(tree_.kids_.size());
    n.size = static_cast<uint32_t>(pending_.size() - first);
    uint64_t size = 1;
    for (size_t k = first; k < pending_.size(); ++k) size += expanded_[pending_[k]];
    expanded_[i] = size;
    tree_.kids_.insert(tree_.kids_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(first),
                       pending_.end());
    pending_.resize(first);
    if (n.type == YamlTree::Type::kMap) indexMap(n);
  }

  void indexMap(YamlTree::Node& n) {
    if (n.size / 2 <= kIndexedMapKeys) return;
    auto& index = tree_.index_;
    const size_t from = index.size();
    const uint32_t* kids = tree_.kids_.data() + n.begin;
    for (uint32_t k = 0; k + 1 < n.size; k += 2) {
      if (tree_.nodes_[kids[k]].type == YamlTree::Type::kScalar) index.push_back(k);
    }
    auto key = [&](uint32_t k) { return tree_.scalar(tree_.nodes_[kids[k]]); };
    std::stable_sort(index.begin() + static_cast<std::ptrdiff_t>(from), index.end(),
                     [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    n.indexBegin = static_cast<uint32_t>(from);
    n.indexSize = static_cast<uint32_t>(index.size() - from);
  }

  YamlTree& tree_;
  const std::string_view text_;
  const std::string& source_;
  const size_t maxNodes_;
  uint64_t total_ = 0;
  std::vector<uint64_t> expanded_;  // per node: nodes in its subtree, aliases expanded
  struct Open {
    uint32_t node;
    size_t firstPending;
  };
  std::vector<Open> open_;         // containers being built, innermost last
  std::vector<uint32_t> pending_;  // their children so far
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

std::string_view YamlNode::Scalar() const {
  return IsScalar() ? tree_->scalar(tree_->nodes_[index_]) : std::string_view();
}

bool YamlNode::IsPlain() const { return IsScalar() && tree_->nodes_[index_].plain; }

int YamlNode::line() const { return tree_ ? tree_->nodes_[index_].line : 0; }

size_t YamlNode::childCount() const {
  if (!tree_) return 0;
  const YamlTree::Node& n = tree_->nodes_[index_];
  return n.type == YamlTree::Type::kSequence || n.type == YamlTree::Type::kMap ? n.size : 0;
}

YamlNode YamlNode::child(size_t i) const {
  return YamlNode(tree_, tree_->kids_[tree_->nodes_[index_].begin + i]);
}

YamlNode YamlNode::operator[](std::string_view key) const {
  if (!IsMap()) return {};
  const auto& nodes = tree_->nodes_;
  const YamlTree::Node& n = nodes[index_];
  const uint32_t* kids = tree_->kids_.data() + n.begin;
  auto keyOf = [&](uint32_t k) -> const YamlTree::Node& { return nodes[kids[k]]; };
  if (n.indexSize > 0) {
    const uint32_t* first = tree_->index_.data() + n.indexBegin;
    const uint32_t* last = first + n.indexSize;
    const uint32_t* it = std::lower_bound(first, last, key, [&](uint32_t k, std::string_view want) {
      return tree_->scalar(keyOf(k)) < want;
    });
    if (it != last && tree_->scalar(keyOf(*it)) == key) return YamlNode(tree_, kids[*it + 1]);
    return {};
  }
  for (uint32_t k = 0; k + 1 < n.size; k += 2) {
    const YamlTree::Node& kn = keyOf(k);
    if (kn.type == YamlTree::Type::kScalar && tree_->scalar(kn) == key) {
      return YamlNode(tree_, kids[k + 1]);
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
