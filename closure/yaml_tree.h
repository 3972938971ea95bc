// YamlTree: a read-only YAML document built from libyaml's event parser, with
// the limits of docs/limits.md enforced while it is built.
//
// yaml-cpp's YAML::Load has no bound on what a document may make its reader do:
// an alias is free to write and stands for its whole anchored subtree, so nine
// lines of nested aliases ("billion laughs") describe 10^9 nodes; map lookups
// are linear, so entry-by-key loops over large maps are quadratic. This tree
// shares aliased subtrees (no copy) but counts every alias as the size of what
// it stands for, refuses a document whose expanded size is over the node limit,
// refuses an alias to a node that is still open (a cycle), and indexes large
// maps for logarithmic lookup. Lookups return the first of duplicate keys and
// match scalar keys only, as YAML::Node does.
// Thread-safety: a built tree is immutable; views may be read concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "closure/closure.h"

namespace lockstep::closure::internal {

class YamlTree;

// A view of one node (or of nothing: a missing key), in the spirit of YAML::Node.
class YamlNode {
 public:
  YamlNode() = default;
  explicit operator bool() const { return tree_ != nullptr; }
  bool IsNull() const;
  bool IsScalar() const;
  bool IsSequence() const;
  bool IsMap() const;
  std::string_view Scalar() const;  // "" unless a scalar; lives as long as the tree
  // An untagged plain scalar (not quoted, no block style): one whose type a reader
  // resolves from its text (`1` an integer, `"1"` a string).
  bool IsPlain() const;
  int line() const;  // 1-based; 0 for a missing node
  // Map lookup by scalar key; a missing node when absent or not a map.
  YamlNode operator[](std::string_view key) const;
  // Sequence items, or map keys and values interleaved (key, value, key, ...).
  size_t childCount() const;
  YamlNode child(size_t i) const;

 private:
  friend class YamlTree;
  YamlNode(const YamlTree* tree, uint32_t index) : tree_(tree), index_(index) {}
  const YamlTree* tree_ = nullptr;
  uint32_t index_ = 0;
};

// Iteration helpers: `for (YamlNode item : items(seq))`, `for (auto [k, v] : entries(map))`.
std::vector<YamlNode> items(const YamlNode& sequence);
std::vector<std::pair<YamlNode, YamlNode>> entries(const YamlNode& map);

class YamlTree {
 public:
  // Parses the first document of `text`. Errors: kInvalidArgument (syntax, a
  // recursive alias) or kResourceExhausted (over `maxNodes` expanded nodes),
  // both as "<source>:<line>: yaml: <reason>".
  static StatusOr<YamlTree> parse(std::string_view text, const std::string& source,
                                  size_t maxNodes);
  YamlNode root() const { return nodes_.empty() ? YamlNode() : YamlNode(this, 0); }
  YamlTree(YamlTree&&) = default;
  YamlTree& operator=(YamlTree&&) = default;
  YamlTree(const YamlTree&) = delete;
  YamlTree& operator=(const YamlTree&) = delete;

 private:
  friend class YamlNode;
  friend class YamlBuilder;
  enum class Type : uint8_t { kNull, kScalar, kSequence, kMap };
  // Nodes hold offsets into three arrays, so a tree is four allocations, not
  // one or more per node.
  struct Node {
    Type type = Type::kNull;
    bool closed = false;
    bool plain = false;  // kScalar: untagged and in the plain style
    int line = 0;
    uint32_t begin = 0;  // scalar: offset in scalars_; container: first child in kids_
    uint32_t size = 0;   // scalar: bytes; container: children
    // Maps with many keys: [indexBegin, indexBegin + indexSize) in index_ holds the
    // positions of the scalar keys among the children, sorted by key text, the
    // first of duplicates first.
    uint32_t indexBegin = 0;
    uint32_t indexSize = 0;
  };
  YamlTree() = default;
  std::string_view scalar(const Node& n) const { return {scalars_.data() + n.begin, n.size}; }
  std::vector<Node> nodes_;
  std::string scalars_;         // every scalar's text, one after another
  std::vector<uint32_t> kids_;  // each container's children, contiguous
  std::vector<uint32_t> index_;
};

}  // namespace lockstep::closure::internal
