// The change windows of the Models the ModelRelease controller reconciles
// against (docs/change-windows.md): each Model's spec.changeWindows compiled
// once per generation (a rule libical takes long to refuse is not parsed on
// every reconcile), evaluated at the instant it is given. The answer is what
// the planners act on (change_window_gate.h): nullopt while the model is
// open. Windows that cannot be compiled keep the model closed with the error
// (a typo never opens a freeze). Thread-safety: closedAt may be called from
// any worker.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/modelrelease/change_window_gate.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

class ModelWindows {
 public:
  ModelWindows();
  ~ModelWindows();
  ModelWindows(const ModelWindows&) = delete;
  ModelWindows& operator=(const ModelWindows&) = delete;

  // The Model `model` at `nowUnix`: nullopt when its windows leave it open (or it has none).
  std::optional<ClosedWindow> closedAt(const kube::Object& model, int64_t nowUnix);

 private:
  struct Compiled;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Compiled>> byModel_;  // "ns/name"
};

}  // namespace lockstep::controllers
