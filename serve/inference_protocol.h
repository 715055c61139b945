// The KServe v2 / Triton inference request and response bodies: JSON tensors and the binary tensor extension
// (https://github.com/kserve/open-inference-protocol, Triton's binary_tensor_data extension). Pure functions over
// bytes, no HTTP: http_routes.cpp feeds them the body and the Inference-Header-Content-Length header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace corgy::serve {

/// A request the server refuses, with the HTTP status to answer (400, 404, 413, 503...) and a message that says why.
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

/// A tensor in a request or a response: name, shape (batch first) and float32 values in row-major order.
struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

/// An output the client asks for, and whether it wants it in the binary section.
struct RequestedOutput {
  std::string name;
  bool binary = false;
};

struct InferRequest {
  std::string id;  ///< echoed in the response when given
  std::vector<Tensor> inputs;
  /// Empty: every output of the model, binary when `binary_outputs` (the request's parameters.binary_data_output).
  std::vector<RequestedOutput> outputs;
  bool binary_outputs = false;
};

struct ParseLimits {
  /// The most values one input tensor may declare (its shape's product); more is a 400 before anything is allocated.
  std::uint64_t max_tensor_elements = std::uint64_t{1} << 26;
};

/// Parses an infer request body. `header_length` is the value of Inference-Header-Content-Length when the request
/// has one (the JSON is then body[0, header_length) and the binary tensors follow it), nullopt otherwise. Throws
/// RequestError(400) naming what is wrong: invalid JSON, a missing or mistyped field, a datatype other than FP32, a
/// shape whose product is not the number of values or exceeds the limit, a binary section shorter or longer than
/// the inputs' binary_data_size add up to, a header length beyond the body.
InferRequest parse_infer_request(std::string_view body, std::optional<std::string_view> header_length,
                                 const ParseLimits& limits);

/// A response body and, when some output is binary, the length of its JSON header (the value of the response's
/// Inference-Header-Content-Length).
struct EncodedResponse {
  std::string body;
  std::optional<std::size_t> header_length;
};

/// Encodes the outputs (in the order given) of a successful inference. `binary[k]` puts output k in the binary
/// section (its values as little-endian float32, parameters.binary_data_size in the JSON) instead of "data".
EncodedResponse encode_infer_response(const std::string& model_name, const std::string& model_version,
                                      const std::string& id, const std::vector<Tensor>& outputs,
                                      const std::vector<bool>& binary);

/// The body of an error response: {"error": message}.
std::string error_body(std::string_view message);

/// "[2, 1, 28, 28]": a shape as the messages write it.
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace corgy::serve
