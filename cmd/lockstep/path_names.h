// Path helpers shared by the CLI's verbs that read a lock and the files it names.
// Pure string functions; thread-safe.
#pragma once

#include <string>

namespace lockstep::cli {

// "a/b/c.lock" -> "c.lock"; a name without '/' is itself.
inline std::string baseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "a/b/c.lock" -> "a/b"; "c.lock" -> "."; "/c.lock" -> "/".
inline std::string dirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace lockstep::cli
