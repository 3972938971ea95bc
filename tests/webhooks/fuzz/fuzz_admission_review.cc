// libFuzzer target: raw bytes into both AdmissionReview handlers (the whole
// pure path: JSON decode, validators, encode). Built with LOCKSTEP_FUZZ only.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tests/support/fake_clock.h"
#include "webhooks/admission/handler.h"
#include "webhooks/admission/static_lookups.h"

namespace lw = lockstep::webhooks;

namespace {

struct World {
  World() {
    const std::string hex(64, 'a');
    envs.put({"torch", "ml", "sha256:" + std::string(64, 'c'),
              "registry.example/runtimes/torch@sha256:" + hex, true});
    envs.put({"torch", "soft", "sha256:" + std::string(64, 'c'), "python@sha256:" + hex, true});
    envs.put({"pending", "ml", "", "", false});
    modes.set("ml", lw::NamespaceMode::kEnforce);
    modes.set("soft", lw::NamespaceMode::kWarn);
    modes.set("quiet", lw::NamespaceMode::kAudit);
    modes.set("kube-system", lw::NamespaceMode::kOff);
  }
  lw::StaticRuntimeEnvs envs;
  lw::StaticNamespaceModes modes;
  lw::NullRecorder recorder;
  lockstep::testing::FakeClock clock;
  lw::PodWebhook pods{envs, modes, recorder, clock};
  lw::FixedAuthorizer authorizer{true};
  lw::ModelReleaseWebhook releases{envs, authorizer, recorder, clock};
};

void check(const lw::HttpReply& r) {
  // Every 200 must be a well-formed AdmissionReview response.
  if (r.status == 200) {
    auto doc = nlohmann::json::parse(r.body, nullptr, false);
    if (doc.is_discarded() || !doc.contains("response") || !doc["response"].contains("uid"))
      __builtin_trap();
  } else if (r.status != 400) {
    __builtin_trap();  // 500 means an exception escaped a validator: a bug
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  check(world->pods.handle(body));
  check(world->releases.handle(body));
  return 0;
}
