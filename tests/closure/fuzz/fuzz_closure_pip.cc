// libFuzzer target: pip requirements and their `-r` include graph.
//
// The input is a main requirements file, optionally followed by more files, each
// introduced by a header line `==> NAME <==` (the form of `tail` with several
// files); `-r NAME` in any file includes another. The fuzzer so explores include
// graphs (diamonds, repeats, cycles, depth) as well as the line parser; a graph
// whose cost grows faster than its size (each include parsed per occurrence,
// issue 13) shows up as a timeout or an out-of-memory crash.
#include "tests/closure/fuzz/fuzz_common.h"

namespace {

constexpr std::string_view kHeader = "==> ";
constexpr std::string_view kTrailer = " <==";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::closure;
  fuzz::Input in = fuzz::decode(data, size, {LockFormat::kPip});
  std::map<std::string, std::string> files = {
      {"base.txt", "six==1.16.0 --hash=sha256:" + std::string(64, 'a') + "\n"}};
  std::string_view rest = in.text;
  std::string_view main;
  std::string* current = nullptr;
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t nl = rest.find('\n', pos);
    size_t end = nl == std::string_view::npos ? rest.size() : nl + 1;
    std::string_view line = rest.substr(pos, end - pos);
    std::string_view bare = line.substr(0, line.find('\n'));
    if (bare.size() > kHeader.size() + kTrailer.size() && bare.substr(0, 4) == kHeader &&
        bare.substr(bare.size() - kTrailer.size()) == kTrailer) {
      if (!current) main = rest.substr(0, pos);
      current = &files[std::string(
          bare.substr(kHeader.size(), bare.size() - kHeader.size() - kTrailer.size()))];
      current->clear();
    } else if (current) {
      current->append(line);
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  if (!current) main = rest;
  MapIncludeReader includes(std::move(files));
  in.options.includes = &includes;
  fuzz::checkInvariants(computeClosure(main, in.options));
  return 0;
}
