// libFuzzer target: the JSON family (Flox manifest.lock, nix path-info).
#include "tests/closure/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lockstep::closure::LockFormat;
  lockstep::closure::fuzz::run(data, size, {LockFormat::kFlox, LockFormat::kNix});
  return 0;
}
