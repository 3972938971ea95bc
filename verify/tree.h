// Tree: how the verify library reads an installed environment or a host's
// /proc, /dev and /sys without doing file I/O itself.
//
// The collectors (env_inventory.h, host_facts.h) walk a Tree; `FsTree`
// (fs_tree.h, target lockstep_verify_fs) is the one implementation over the
// file system, and unit tests hand in an in-memory tree. Paths are absolute
// strings ("/opt/env/conda-meta"); an implementation may map them under a root.
// Thread-safety: implementations decide; the collectors call from one thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::verify {

struct DirEntry {
  std::string name;  // the entry's name, not its path
  bool isDir = false;
};

class Tree {
 public:
  virtual ~Tree() = default;
  // The entries of a directory, sorted by name. NotFound when `dir` does not exist,
  // InvalidArgument when it is not a directory or cannot be read.
  virtual StatusOr<std::vector<DirEntry>> list(const std::string& dir) const = 0;
  // A regular file's content; ResourceExhausted when it is longer than maxBytes.
  virtual StatusOr<std::string> read(const std::string& path, size_t maxBytes) const = 0;
  // True when something (file, directory, device node) exists at `path`.
  virtual bool exists(const std::string& path) const = 0;
  // The first occurrence of `needle` in the file and up to `after` bytes that follow
  // it, scanning at most `maxBytes` (a shared library is read in pieces, not whole);
  // nullopt when it is absent or the file cannot be read.
  virtual std::optional<std::string> find(const std::string& path, const std::string& needle,
                                          size_t after, size_t maxBytes) const = 0;
  // The path with symbolic links resolved, so two names of one directory (a venv's
  // lib64 -> lib) are read once; `path` itself when it cannot be resolved.
  virtual std::string canonical(const std::string& path) const = 0;
};

// "a" + "/" + "b" without doubled slashes.
std::string joinPath(const std::string& dir, const std::string& name);

}  // namespace lockstep::verify
