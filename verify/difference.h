// Difference: one way an installed environment or a host does not fit a closure,
// as verify-env and verify-host report it (package or check, expected, found).
// Thread-safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lockstep::verify {

enum class DiffKind {
  kMissing,  // locked, not installed (or a store path that does not exist)
  kExtra,    // installed, not locked
  kVersion,  // installed with another version
  kDigest,   // installed from another archive (sha256) than the lock names
  kCommit,   // a VCS source installed at another commit (or without a VCS record)
  kHost,     // a host check (driver, gpus, cuda-runtime, nccl, rdma, nccl-ib-hca)
};

// "missing", "extra", "version", "digest", "commit", "host".
std::string_view diffKindName(DiffKind k);

struct Difference {
  DiffKind kind = DiffKind::kMissing;
  std::string ecosystem;  // "conda", "pypi", "nix"; "host" for host checks
  std::string package;    // package name, or the host check's name ("driver")
  std::string expected;   // what the closure requires ("" for an extra package)
  std::string found;      // what is there ("" when nothing is)
  std::string where;      // the file or directory read, for the reader of the report
  bool operator==(const Difference& o) const = default;
};

// "pypi idna: version: expected 3.11, found 3.10 (/v/lib/.../METADATA)": one line, no LF.
std::string describe(const Difference& d);

}  // namespace lockstep::verify
