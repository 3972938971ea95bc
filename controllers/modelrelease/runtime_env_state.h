// The RuntimeEnv a ModelRelease runs on, as admission sees it (pure): found,
// Ready for its current generation with a closure hash, the hash and image,
// or why not. Every stage and a manual rollback start only on a Ready runtime
// whose hash is the release's. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lockstep::controllers {

struct RuntimeEnvState {
  bool found = false;
  bool ready = false;  // Ready=True for its current generation, with a hash
  std::string closureHash, image;
  std::string notReadyMessage;
};

RuntimeEnvState runtimeEnvState(const std::optional<nlohmann::json>& runtimeEnv);

}  // namespace lockstep::controllers
