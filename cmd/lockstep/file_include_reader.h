// FileIncludeReader: resolves pip `-r` includes as files beside the lock file.
//
// The only file I/O of the closure path lives here, in the CLI; the library sees
// the IncludeReader interface. Thread-safety: stateless reads; safe to share.
#pragma once

#include <string>

#include "closure/include_reader.h"

namespace lockstep::cli {

class FileIncludeReader : public closure::IncludeReader {
 public:
  explicit FileIncludeReader(std::string directory) : directory_(std::move(directory)) {}
  StatusOr<std::string> read(const std::string& name) const override;

 private:
  std::string directory_;
};

// Reads a whole file ("-" is standard input).
StatusOr<std::string> readFile(const std::string& path);

}  // namespace lockstep::cli
