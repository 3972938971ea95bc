// Mounts admission webhooks on a Server: POST <webhook.path()> with a JSON
// body → AdmissionWebhook::handle; other content types answer 415.
// Thread-safety: call before Server::start().
#pragma once

#include "webhooks/admission/handler.h"
#include "webhooks/server/server.h"

namespace lockstep::webhooks {

void mountWebhook(Server& server, AdmissionWebhook& webhook);

}  // namespace lockstep::webhooks
