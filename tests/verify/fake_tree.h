// FakeTree: an in-memory verify::Tree for unit tests of the collectors.
// Files are added by absolute path; their directories exist implicitly.
// Thread-safety: not thread-safe; one test at a time.
#pragma once

#include <map>
#include <set>
#include <string>

#include "verify/tree.h"

namespace lockstep::verify::testing {

class FakeTree : public Tree {
 public:
  FakeTree& file(const std::string& path, std::string content) {
    files_[path] = std::move(content);
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      dirs_.insert(path.substr(0, slash));
    }
    dirs_.insert("/");
    return *this;
  }
  FakeTree& dir(const std::string& path) {
    file(path + "/.keep", "");
    files_.erase(path + "/.keep");
    dirs_.insert(path);
    return *this;
  }

  // `path` is a symbolic link to the directory `target`.
  FakeTree& link(const std::string& path, const std::string& target) {
    links_[path] = target;
    return *this;
  }
  std::string canonical(const std::string& path) const override {
    for (const auto& [from, to] : links_) {
      if (path == from || path.rfind(from + "/", 0) == 0) return to + path.substr(from.size());
    }
    return path;
  }

  StatusOr<std::vector<DirEntry>> list(const std::string& path) const override {
    const std::string dir = canonical(path);
    if (files_.count(dir)) return invalidArgument(dir + ": not a directory");
    if (!dirs_.count(dir)) return notFound(dir + ": no such directory");
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    std::map<std::string, bool> names;
    for (const auto& [p, c] : files_) {
      if (p.rfind(prefix, 0) == 0 && p.find('/', prefix.size()) == std::string::npos) {
        names[p.substr(prefix.size())] = false;
      }
    }
    for (const auto& d : dirs_) {
      if (d.size() > prefix.size() && d.rfind(prefix, 0) == 0 &&
          d.find('/', prefix.size()) == std::string::npos) {
        names[d.substr(prefix.size())] = true;
      }
    }
    std::vector<DirEntry> out;
    for (const auto& [n, isDir] : names) out.push_back({n, isDir});
    return out;
  }
  StatusOr<std::string> read(const std::string& path, size_t maxBytes) const override {
    auto it = files_.find(canonical(path));
    if (it == files_.end()) return notFound(path + ": no such file");
    if (it->second.size() > maxBytes) return resourceExhausted(path + ": too large");
    return it->second;
  }
  bool exists(const std::string& path) const override {
    const std::string p = canonical(path);
    return files_.count(p) > 0 || dirs_.count(p) > 0;
  }
  std::optional<std::string> find(const std::string& path, const std::string& needle, size_t after,
                                  size_t maxBytes) const override {
    auto it = files_.find(canonical(path));
    if (it == files_.end()) return std::nullopt;
    size_t at = it->second.substr(0, maxBytes).find(needle);
    if (at == std::string::npos) return std::nullopt;
    return it->second.substr(at, needle.size() + after);
  }

 private:
  std::map<std::string, std::string> files_;
  std::set<std::string> dirs_;
  std::map<std::string, std::string> links_;
};

}  // namespace lockstep::verify::testing
