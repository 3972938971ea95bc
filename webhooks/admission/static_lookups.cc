#include "webhooks/admission/static_lookups.h"

#include <nlohmann/json.hpp>

#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {

namespace ja = json_access;

std::optional<RuntimeEnvView> StaticRuntimeEnvs::find(std::string_view ns,
                                                      std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = envs_.find(std::pair{std::string(ns), std::string(name)});
  if (it == envs_.end()) return std::nullopt;
  return it->second;
}

void StaticRuntimeEnvs::put(RuntimeEnvView env) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::pair{env.ns, env.name};
  envs_[std::move(key)] = std::move(env);
}

void StaticRuntimeEnvs::erase(std::string_view ns, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  envs_.erase(std::pair{std::string(ns), std::string(name)});
}

StatusOr<NamespaceMode> StaticNamespaceModes::modeOf(std::string_view ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = modes_.find(ns);
  return it == modes_.end() ? NamespaceMode::kUnset : it->second;
}

void StaticNamespaceModes::set(std::string ns, NamespaceMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  modes_[std::move(ns)] = mode;
}

StatusOr<AccessDecision> StaticAuthorizer::authorize(const AccessRequest& q) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rules_.find({q.user.username, q.verb});
  bool allowed = it == rules_.end() ? default_ : it->second;
  return AccessDecision{allowed, it == rules_.end() ? "default rule" : "static rule", ""};
}

void StaticAuthorizer::setDefault(bool allowed) {
  std::lock_guard<std::mutex> lock(mu_);
  default_ = allowed;
}

void StaticAuthorizer::set(std::string user, std::string verb, bool allowed) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_[{std::move(user), std::move(verb)}] = allowed;
}

StatusOr<StaticLookups> loadStaticLookups(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return invalidArgument("lookups: not a JSON object");
  StaticLookups out;
  if (const auto* envs = ja::child(&doc, "runtimeEnvs")) {
    if (!envs->is_array()) return invalidArgument("lookups: runtimeEnvs must be a list");
    for (std::size_t i = 0; i < envs->size(); ++i) {
      const nlohmann::json* e = &(*envs)[i];
      RuntimeEnvView v;
      v.ns = ja::strOr(ja::child(e, "namespace"));
      v.name = ja::strOr(ja::child(e, "name"));
      v.closureHash = ja::strOr(ja::child(e, "closureHash"));
      v.image = ja::strOr(ja::child(e, "image"));
      const nlohmann::json* ready = ja::child(e, "ready");
      v.ready = ready != nullptr && ready->is_boolean() && ready->get<bool>();
      if (v.ns.empty() || v.name.empty()) {
        return invalidArgument("lookups: runtimeEnvs[" + std::to_string(i) +
                               "] needs namespace and name");
      }
      const std::string where = "lookups: runtimeEnvs[" + std::to_string(i) + "]";
      if (const auto* cur = ja::child(e, "currentRevision")) {
        if (!cur->is_number_integer())
          return invalidArgument(where + ".currentRevision must be an integer");
        v.currentRevision = cur->get<int64_t>();
      }
      if (const auto* revs = ja::child(e, "revisions")) {
        if (!revs->is_array()) return invalidArgument(where + ".revisions must be a list");
        for (std::size_t k = 0; k < revs->size(); ++k) {
          const nlohmann::json* rj = &(*revs)[k];
          const std::string at = where + ".revisions[" + std::to_string(k) + "]";
          const nlohmann::json* number = ja::child(rj, "number");
          if (number == nullptr || !number->is_number_integer() || number->get<int64_t>() <= 0)
            return invalidArgument(at + ".number must be a positive integer");
          RevisionView rv;
          rv.number = number->get<int64_t>();
          rv.image = ja::strOr(ja::child(rj, "image"));
          rv.closureHash = ja::strOr(ja::child(rj, "closureHash"));
          if (const auto* pins = ja::child(rj, "pinnedBy")) {
            if (!pins->is_array()) return invalidArgument(at + ".pinnedBy must be a list");
            for (const auto& p : *pins) {
              if (!p.is_string()) return invalidArgument(at + ".pinnedBy must list names");
              rv.pinnedBy.push_back(p.get<std::string>());
            }
          }
          v.revisions.push_back(std::move(rv));
        }
      }
      out.envs->put(std::move(v));
    }
  }
  if (const auto* nss = ja::child(&doc, "namespaces")) {
    if (!nss->is_object()) return invalidArgument("lookups: namespaces must be an object");
    for (const auto& [ns, mode] : nss->items()) {
      if (!mode.is_string())
        return invalidArgument("lookups: namespaces." + ns + " must be a string");
      out.namespaces->set(ns, parseNamespaceMode(mode.get<std::string>()));
    }
  }
  if (const auto* authz = ja::child(&doc, "authorization")) {
    if (!authz->is_object()) return invalidArgument("lookups: authorization must be an object");
    std::string def = ja::strOr(ja::child(authz, "default"), "allow");
    if (def != "allow" && def != "deny")
      return invalidArgument("lookups: authorization.default must be allow or deny");
    out.authorizer->setDefault(def == "allow");
    if (const auto* rules = ja::child(authz, "rules")) {
      if (!rules->is_array()) return invalidArgument("lookups: authorization.rules must be a list");
      for (std::size_t i = 0; i < rules->size(); ++i) {
        const nlohmann::json* r = &(*rules)[i];
        std::string user = ja::strOr(ja::child(r, "user"));
        std::string verb = ja::strOr(ja::child(r, "verb"));
        const nlohmann::json* allowed = ja::child(r, "allowed");
        if (user.empty() || verb.empty() || allowed == nullptr || !allowed->is_boolean()) {
          return invalidArgument("lookups: authorization.rules[" + std::to_string(i) +
                                 "] needs user, verb and allowed (a boolean)");
        }
        out.authorizer->set(std::move(user), std::move(verb), allowed->get<bool>());
      }
    }
  }
  return out;
}

}  // namespace lockstep::webhooks
