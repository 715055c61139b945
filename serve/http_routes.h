// The HTTP/REST endpoints of the KServe v2 / Triton protocol (docs/serving.md lists them), on a cpp-httplib server.
#pragma once

#include <cstddef>
#include <string>

#include "serve/inference_protocol.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"

namespace httplib {
class Server;
}

namespace corgy::serve {

struct RouteOptions {
  std::string server_version;
  /// The largest request body; a larger Content-Length is answered 413 before the body is read.
  std::size_t max_request_bytes = std::size_t{64} << 20;
  ParseLimits limits;
};

/// Registers every route, and the handlers that turn errors and unknown routes into {"error": ...} bodies.
/// `registry` and `metrics` must outlive the server.
void install_routes(httplib::Server& server, ModelRegistry& registry, Metrics& metrics, const RouteOptions& options);

}  // namespace corgy::serve
