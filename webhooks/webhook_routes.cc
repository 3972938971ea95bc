#include "webhooks/webhook_routes.h"

#include <string>

namespace lockstep::webhooks {

void mountWebhook(Server& server, AdmissionWebhook& webhook) {
  server.route(std::string(webhook.path()), "POST", [&webhook](const HttpRequest& req) {
    std::string_view ct = req.contentType;
    if (!ct.empty() && ct.substr(0, 16) != "application/json") {
      return HttpResponse{415, "text/plain; charset=utf-8",
                          "Content-Type must be application/json\n"};
    }
    HttpReply r = webhook.handle(req.body);
    return HttpResponse{r.status, std::move(r.contentType), std::move(r.body)};
  });
}

}  // namespace lockstep::webhooks
