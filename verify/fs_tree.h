// FsTree: the Tree of the verify library over the real file system (std::filesystem).
// The one file of the verify code that touches files. Thread-safety: stateless; share freely.
#pragma once

#include "verify/tree.h"

namespace lockstep::verify {

class FsTree : public Tree {
 public:
  StatusOr<std::vector<DirEntry>> list(const std::string& dir) const override;
  StatusOr<std::string> read(const std::string& path, size_t maxBytes) const override;
  bool exists(const std::string& path) const override;
  std::optional<std::string> find(const std::string& path, const std::string& needle, size_t after,
                                  size_t maxBytes) const override;
  std::string canonical(const std::string& path) const override;
};

}  // namespace lockstep::verify
