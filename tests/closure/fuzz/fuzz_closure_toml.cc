// libFuzzer target: the TOML family (uv.lock, poetry.lock).
#include "tests/closure/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lockstep::closure::LockFormat;
  lockstep::closure::fuzz::run(data, size, {LockFormat::kUv, LockFormat::kPoetry});
  return 0;
}
