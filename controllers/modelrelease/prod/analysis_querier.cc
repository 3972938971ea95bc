#include "controllers/modelrelease/prod/analysis_querier.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "operator/prometheus/client.h"

namespace lockstep::controllers {
namespace {

class PrometheusQuerier final : public AnalysisQuerier {
 public:
  Measurement measure(const PrometheusAnalysis& a, int64_t nowUnix) override {
    Measurement m;
    m.atUnix = nowUnix;
    const prometheus::Client* client = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = clients_.find(a.address);
      if (it == clients_.end()) {
        prometheus::ClientConfig config;
        config.address = a.address;
        config.timeout = std::chrono::seconds(10);
        auto c = prometheus::Client::connect(config);
        if (!c.isOk()) {
          m.error = c.status().message();
          return m;
        }
        it = clients_.emplace(a.address, std::move(*c)).first;
      }
      client = it->second.get();
    }
    prometheus::QueryResult r = client->query(a.query, nowUnix);
    if (r.value) {
      m.value = *r.value;
    } else {
      m.error = r.error.empty() ? std::string("no value") : r.error;
    }
    return m;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<prometheus::Client>> clients_;
};

}  // namespace

std::shared_ptr<AnalysisQuerier> makePrometheusQuerier() {
  return std::make_shared<PrometheusQuerier>();
}

}  // namespace lockstep::controllers
