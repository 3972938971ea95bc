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
  // Regular files only (a FIFO or device beside the lock would block or never end),
  // at most maxBytes.
  StatusOr<std::string> read(const std::string& name, size_t maxBytes) const override;

 private:
  std::string directory_;
};

// Reads a whole file ("-" is standard input); ResourceExhausted when it is longer
// than maxBytes (at most maxBytes + 1 bytes are read). Files other than standard
// input must be regular files.
StatusOr<std::string> readFile(const std::string& path, size_t maxBytes);

}  // namespace lockstep::cli
