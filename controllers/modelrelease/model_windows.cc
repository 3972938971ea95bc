#include "controllers/modelrelease/model_windows.h"

#include <utility>
#include <vector>

#include "api/v1alpha1/model.h"
#include "changewindows/change_window.h"
#include "changewindows/evaluate.h"
#include "common/status.h"

namespace lockstep::controllers {
namespace {
namespace v1 = api::v1alpha1;
namespace cw = changewindows;
}  // namespace

struct ModelWindows::Compiled {
  std::string uid;
  int64_t generation = 0;
  StatusOr<std::vector<cw::ChangeWindow>> windows{std::vector<cw::ChangeWindow>{}};
};

ModelWindows::ModelWindows() = default;
ModelWindows::~ModelWindows() = default;

std::optional<ClosedWindow> ModelWindows::closedAt(const kube::Object& object, int64_t nowUnix) {
  const v1::Model model = v1::decodeModel(object);
  if (model.spec.changeWindows.empty()) return std::nullopt;
  const std::string key = model.meta.ns + "/" + model.meta.name;
  std::shared_ptr<const Compiled> compiled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = byModel_.find(key);
    if (it != byModel_.end() && it->second->uid == model.meta.uid &&
        it->second->generation == model.meta.generation)
      compiled = it->second;
  }
  if (!compiled) {
    // Compiled outside the lock: a slow rule holds up only this model's reconcile.
    auto fresh = std::make_shared<Compiled>();
    fresh->uid = model.meta.uid;
    fresh->generation = model.meta.generation;
    fresh->windows = cw::compileChangeWindows(model.spec.changeWindows);
    compiled = fresh;
    std::lock_guard<std::mutex> lock(mu_);
    byModel_[key] = std::move(fresh);
  }
  if (!compiled->windows.isOk()) {
    ClosedWindow closed;
    closed.message = "the Model's change windows cannot be read (" +
                     compiled->windows.status().message() +
                     "); nothing new starts until they are fixed";
    return closed;
  }
  const cw::WindowEvaluation e = cw::evaluateChangeWindows(*compiled->windows, nowUnix);
  if (e.state.open) return std::nullopt;
  ClosedWindow closed;
  closed.inFlight = e.state.inFlight == cw::InFlight::kAbort ? ClosedWindow::InFlight::kAbort
                    : e.state.inFlight == cw::InFlight::kPause
                        ? ClosedWindow::InFlight::kPause
                        : ClosedWindow::InFlight::kFinishStep;
  closed.rollbacksAllowed = e.state.rollbacksAllowed;
  closed.message = e.message;
  closed.nextTransition = e.nextTransition.value_or(e.horizon);
  return closed;
}

}  // namespace lockstep::controllers
