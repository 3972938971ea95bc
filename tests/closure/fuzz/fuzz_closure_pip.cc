// libFuzzer target: computeClosure() with format pip.
#include "tests/closure/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lockstep::closure::fuzz::run(data, size, lockstep::closure::LockFormat::kPip);
  return 0;
}
