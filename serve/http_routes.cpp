#include "serve/http_routes.h"

#include <fmt/format.h>
#include <httplib.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "corgy/error.h"

namespace corgy::serve {

namespace {

using nlohmann::json;

constexpr const char* json_type = "application/json";

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), json_type);
}

void send_error(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(error_body(message), json_type);
}

/// The model version a route names ("" for the highest); throws RequestError(404) when there is none.
ServedModel& find_model(ModelRegistry& registry, const std::string& name, const std::string& version) {
  ServedModel* model = registry.find(name, version);
  if (model == nullptr) {
    if (!registry.has_model(name)) throw RequestError(404, fmt::format("unknown model '{}'", name));
    throw RequestError(404, fmt::format("model '{}' has no version {}", name, version));
  }
  return *model;
}

/// The model version when it is ready; throws RequestError(503) naming why not otherwise.
ServedModel& ready_model(ModelRegistry& registry, const std::string& name, const std::string& version) {
  ServedModel& model = find_model(registry, name, version);
  if (model.state() != ModelState::ready) {
    throw RequestError(
        503, fmt::format("model '{}' version {} is not ready: {}", name, model.entry().version, model.reason()));
  }
  return model;
}

json tensor_metadata(const TensorSpec& spec) {
  return {{"name", spec.name}, {"datatype", "FP32"}, {"shape", spec.dims}};
}

json model_metadata(const ModelRegistry& registry, const ServedModel& model) {
  const ModelSignature& s = model.signature();
  json outputs = json::array();
  for (const TensorSpec& output : s.outputs) outputs.push_back(tensor_metadata(output));
  return {{"name", model.entry().name}, {"versions", registry.versions(model.entry().name)},
          {"platform", s.platform},     {"inputs", json::array({tensor_metadata(s.input)})},
          {"outputs", outputs},         {"parameters", {{"max_batch_size", model.entry().config.max_batch_size}}}};
}

/// The request's one input as corgy's 4-D Variable, after checking it against the signature: its name, its rank,
/// its fixed dimensions, the batch within max_batch_size.
Variable checked_input(InferRequest& request, const ServedModel& model) {
  const TensorSpec& spec = model.signature().input;
  if (request.inputs.size() != 1) {
    throw RequestError(400, fmt::format("model '{}' takes one input, '{}'; the request has {}", model.entry().name,
                                        spec.name, request.inputs.size()));
  }
  Tensor& input = request.inputs[0];
  if (input.name != spec.name) {
    throw RequestError(
        400, fmt::format("model '{}' has no input '{}'; its input is '{}'", model.entry().name, input.name, spec.name));
  }
  bool fits = input.shape.size() == spec.dims.size();
  for (std::size_t a = 0; a < input.shape.size() && fits; ++a) {
    fits = input.shape[a] >= 1 && input.shape[a] <= INT_MAX && (spec.dims[a] < 0 || spec.dims[a] == input.shape[a]);
  }
  if (!fits) {
    throw RequestError(400, fmt::format("input '{}' has the shape {}; model '{}' takes {} (-1: any size)", input.name,
                                        shape_text(input.shape), model.entry().name, shape_text(spec.dims)));
  }
  const int max_batch = model.entry().config.max_batch_size;
  if (input.shape[0] > max_batch) {
    throw RequestError(400, fmt::format("input '{}' has a batch of {}; model '{}' takes at most {} (max_batch_size)",
                                        input.name, input.shape[0], model.entry().name, max_batch));
  }
  return Variable(to_corgy_shape(input.shape), input.values);
}

void infer(ModelRegistry& registry, const RouteOptions& options, const httplib::Request& req, httplib::Response& res,
           const std::string& name, const std::string& version) {
  ServedModel& model = find_model(registry, name, version);
  try {
    if (model.state() != ModelState::ready) ready_model(registry, name, version);  // throws 503 with the reason
    std::optional<std::string_view> header_length;
    std::string header_value;
    if (req.has_header("Inference-Header-Content-Length")) {
      header_value = req.get_header_value("Inference-Header-Content-Length");
      header_length = header_value;
    }
    InferRequest request = parse_infer_request(req.body, header_length, options.limits);
    const ModelSignature& signature = model.signature();

    // The outputs asked for, in the order asked (all of them when none is named).
    std::vector<std::size_t> chosen;
    std::vector<bool> binary;
    if (request.outputs.empty()) {
      for (std::size_t k = 0; k < signature.outputs.size(); ++k) {
        chosen.push_back(k);
        binary.push_back(request.binary_outputs);
      }
    }
    for (const RequestedOutput& wanted : request.outputs) {
      std::size_t k = 0;
      while (k < signature.outputs.size() && signature.outputs[k].name != wanted.name) ++k;
      if (k == signature.outputs.size()) {
        throw RequestError(400, fmt::format("model '{}' has no output '{}'", name, wanted.name));
      }
      chosen.push_back(k);
      binary.push_back(wanted.binary);
    }

    Variable input = checked_input(request, model);
    request.inputs.clear();  // the values are in `input` now
    BatchResult result = model.batcher().submit(std::move(input)).get();
    if (!result.error.empty()) throw RequestError(500, "inference failed: " + result.error);

    std::vector<Tensor> outputs;
    for (std::size_t k : chosen) {
      const Variable& v = result.outputs.at(k);
      outputs.push_back({signature.outputs[k].name, from_corgy_shape(v.shape(), signature.outputs[k].dims.size()),
                         std::vector<float>(v.data(), v.data() + v.count())});
    }
    EncodedResponse response =
        encode_infer_response(model.entry().name, model.entry().version, request.id, outputs, binary);
    res.status = 200;
    if (response.header_length) {
      res.set_header("Inference-Header-Content-Length", std::to_string(*response.header_length));
      res.set_content(std::move(response.body), "application/octet-stream");
    } else {
      res.set_content(std::move(response.body), json_type);
    }
    model.metrics().request_succeeded();
  } catch (...) {
    model.metrics().request_failed();
    throw;
  }
}

/// Runs a handler, turning a RequestError into its status and an {"error": ...} body.
template <class Handler>
httplib::Server::Handler guarded(Handler handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const RequestError& e) {
      send_error(res, e.status(), e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 503, "out of memory");
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    }
  };
}

std::string default_message(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found: see docs/serving.md for the routes";
    case 405: return "method not allowed";
    case 413: return "the request body is larger than the server's limit (--max-request-bytes)";
    case 414: return "the request URI is too long";
    default: return fmt::format("HTTP status {}", status);
  }
}

}  // namespace

void install_routes(httplib::Server& server, ModelRegistry& registry, Metrics& metrics, const RouteOptions& options) {
  server.set_payload_max_length(options.max_request_bytes);
  server.Get("/v2/health/live", guarded([](const httplib::Request&, httplib::Response& res) {
               send_json(res, 200, {{"live", true}});
             }));
  server.Get("/v2/health/ready", guarded([&registry](const httplib::Request&, httplib::Response& res) {
               const bool ready = registry.all_ready();
               send_json(res, ready ? 200 : 400, {{"ready", ready}});
             }));
  server.Get(
      "/v2", guarded([version = options.server_version](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, {{"name", "corgy-serve"}, {"version", version}, {"extensions", {"binary_tensor_data"}}});
      }));
  const auto metadata = [&registry](const httplib::Request& req, httplib::Response& res) {
    const std::string version = req.matches.size() > 2 ? req.matches[2].str() : "";
    ServedModel& model = ready_model(registry, req.matches[1], version);
    send_json(res, 200, model_metadata(registry, model));
  };
  server.Get("/v2/models/([^/]+)", guarded(metadata));
  server.Get("/v2/models/([^/]+)/versions/([^/]+)", guarded(metadata));
  const auto ready = [&registry](const httplib::Request& req, httplib::Response& res) {
    const std::string version = req.matches.size() > 2 ? req.matches[2].str() : "";
    ServedModel& model = find_model(registry, req.matches[1], version);
    const bool is_ready = model.state() == ModelState::ready;
    send_json(res, is_ready ? 200 : 400, {{"name", model.entry().name}, {"ready", is_ready}});
  };
  server.Get("/v2/models/([^/]+)/ready", guarded(ready));
  server.Get("/v2/models/([^/]+)/versions/([^/]+)/ready", guarded(ready));
  const auto infer_route = [&registry, options](const httplib::Request& req, httplib::Response& res) {
    const std::string version = req.matches.size() > 2 ? req.matches[2].str() : "";
    infer(registry, options, req, res, req.matches[1], version);
  };
  server.Post("/v2/models/([^/]+)/infer", guarded(infer_route));
  server.Post("/v2/models/([^/]+)/versions/([^/]+)/infer", guarded(infer_route));
  server.Get("/metrics", guarded([&metrics](const httplib::Request&, httplib::Response& res) {
               res.status = 200;
               res.set_content(metrics.render(), "text/plain; version=0.0.4");
             }));

  // Unknown routes (404), bodies over the limit (413) and requests httplib could not parse (400) reach here with
  // no body: give them the protocol's error body.
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) send_error(res, res.status, default_message(res.status));
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, 500, "internal error");
  });
}

}  // namespace corgy::serve
