// IncludeReader: how the pure pip parser resolves `-r other.txt` without file I/O.
//
// The CLI implements it over the lock file's directory; the RuntimeEnv controller
// can implement it over the other keys of the lock's ConfigMap. Names are plain
// file names in the same directory (no '/', no '..'); the parser enforces that.
// Thread-safety: implementations decide; the parser calls it from one thread.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "common/status.h"

namespace lockstep::closure {

class IncludeReader {
 public:
  virtual ~IncludeReader() = default;
  // The text of `name`, or NotFound / InvalidArgument; ResourceExhausted when it is
  // longer than `maxBytes` (an implementation reads at most maxBytes + 1 bytes).
  virtual StatusOr<std::string> read(const std::string& name, size_t maxBytes) const = 0;
};

// An IncludeReader over an in-memory map (tests, ConfigMap data).
class MapIncludeReader : public IncludeReader {
 public:
  explicit MapIncludeReader(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  StatusOr<std::string> read(const std::string& name, size_t maxBytes) const override {
    auto it = files_.find(name);
    if (it == files_.end()) return notFound("no include named \"" + name + "\"");
    if (it->second.size() > maxBytes) {
      return resourceExhausted("\"" + name + "\" is larger than " + std::to_string(maxBytes) +
                               " bytes");
    }
    return it->second;
  }

 private:
  std::map<std::string, std::string> files_;
};

}  // namespace lockstep::closure
