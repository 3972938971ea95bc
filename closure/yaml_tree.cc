// The YAML adapter: yaml-cpp's event parser feeds a YamlTree; yaml-cpp
// exceptions stop here.
#include "closure/yaml_tree.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <istream>
#include <streambuf>
#include <unordered_map>

#include "closure/lock_parsers.h"

namespace lockstep::closure::internal {
namespace {

// Maps with more keys than this get a sorted index.
constexpr size_t kIndexedMapKeys = 8;

// An istream over the caller's bytes, without copying them.
class ViewBuf : public std::streambuf {
 public:
  explicit ViewBuf(std::string_view text) {
    char* p = const_cast<char*>(text.data());  // NOLINT: read-only use by istream
    setg(p, p, p + text.size());
  }
};

// Thrown by the builder from inside yaml-cpp's parser; caught in YamlTree::parse.
struct BuildError {
  Code code;
  int line;
  std::string reason;
};

int lineOfMark(const YAML::Mark& m) { return m.line >= 0 ? m.line + 1 : 0; }

}  // namespace

class YamlBuilder : public YAML::EventHandler {
 public:
  YamlBuilder(YamlTree& tree, size_t maxNodes) : tree_(tree), maxNodes_(maxNodes) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add(YamlTree::Type::kNull, mark, anchor);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    uint32_t i = add(YamlTree::Type::kScalar, mark, anchor);
    tree_.nodes_[i].scalar = value;
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end())
      throw BuildError{Code::kInvalidArgument, lineOfMark(mark), "unknown alias"};
    const uint32_t target = it->second;
    if (!tree_.nodes_[target].closed) {
      throw BuildError{Code::kInvalidArgument, lineOfMark(mark),
                       "alias refers to a node that contains it (a cycle)"};
    }
    count(expanded_[target], mark);
    attach(target);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open_.push_back(add(YamlTree::Type::kSequence, mark, anchor, /*closed=*/false));
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open_.push_back(add(YamlTree::Type::kMap, mark, anchor, /*closed=*/false));
  }
  void OnMapEnd() override {
    YamlTree::Node& n = tree_.nodes_[open_.back()];
    if (n.kids.size() / 2 > kIndexedMapKeys) {
      const auto& nodes = tree_.nodes_;
      for (uint32_t k = 0; k + 1 < n.kids.size(); k += 2) {
        if (nodes[n.kids[k]].type == YamlTree::Type::kScalar) n.index.push_back(k);
      }
      std::stable_sort(n.index.begin(), n.index.end(), [&](uint32_t a, uint32_t b) {
        return nodes[n.kids[a]].scalar < nodes[n.kids[b]].scalar;
      });
    }
    close();
  }

 private:
  // Every node and every alias counts as the number of nodes it stands for.
  void count(uint64_t nodes, const YAML::Mark& mark) {
    total_ += nodes;
    if (total_ > maxNodes_) {
      throw BuildError{Code::kResourceExhausted, lineOfMark(mark),
                       "more than " + std::to_string(maxNodes_) +
                           " nodes (aliases count as the nodes they repeat)"};
    }
  }

  uint32_t add(YamlTree::Type type, const YAML::Mark& mark, YAML::anchor_t anchor,
               bool closed = true) {
    count(1, mark);
    const auto i = static_cast<uint32_t>(tree_.nodes_.size());
    YamlTree::Node n;
    n.type = type;
    n.closed = closed;
    n.line = lineOfMark(mark);
    tree_.nodes_.push_back(std::move(n));
    expanded_.push_back(1);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = i;
    attach(i);
    return i;
  }

  void attach(uint32_t i) {
    if (open_.empty()) return;  // the root
    tree_.nodes_[open_.back()].kids.push_back(i);
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
  const size_t maxNodes_;
  uint64_t total_ = 0;
  std::vector<uint64_t> expanded_;  // per node: nodes in its subtree, aliases expanded
  std::vector<uint32_t> open_;      // containers being built, innermost last
  std::unordered_map<YAML::anchor_t, uint32_t> anchors_;
};

StatusOr<YamlTree> YamlTree::parse(std::string_view text, const std::string& source,
                                   size_t maxNodes) {
  YamlTree tree;
  try {
    ViewBuf buf(text);
    std::istream in(&buf);
    YAML::Parser parser(in);
    YamlBuilder builder(tree, maxNodes);
    parser.HandleNextDocument(builder);
  } catch (const BuildError& e) {
    return errorAt(source, e.line, "yaml", e.reason, e.code);
  } catch (const YAML::Exception& e) {
    return errorAt(source, lineOfMark(e.mark), "yaml", e.msg);
  } catch (const std::exception& e) {
    return errorAt(source, 0, "yaml", e.what());
  }
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
