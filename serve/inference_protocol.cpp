#include "serve/inference_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace corgy::serve {

static_assert(std::endian::native == std::endian::little, "the binary tensor extension is little-endian");

namespace {

using nlohmann::json;

[[noreturn]] void bad_request(const std::string& message) { throw RequestError(400, message); }

/// The value of `key` in `object` when it is there, else null; fails when `object` is not an object.
const json* member(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) bad_request(fmt::format("{} must be a JSON object", where));
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool bool_parameter(const json& object, const char* key, const std::string& where) {
  const json* parameters = member(object, "parameters", where);
  if (parameters == nullptr) return false;
  const json* value = member(*parameters, key, where + ".parameters");
  if (value == nullptr) return false;
  if (!value->is_boolean()) bad_request(fmt::format("{}.parameters.{} must be true or false", where, key));
  return value->get<bool>();
}

std::string string_field(const json& object, const char* key, const std::string& where) {
  const json* value = member(object, key, where);
  if (value == nullptr) bad_request(fmt::format("{} has no \"{}\"", where, key));
  if (!value->is_string()) bad_request(fmt::format("{}.{} must be a string", where, key));
  return value->get<std::string>();
}

/// The shape's element count, refused past `limit` (and so never overflowing).
std::uint64_t checked_count(const std::vector<std::int64_t>& shape, std::uint64_t limit, const std::string& where) {
  std::uint64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) bad_request(fmt::format("{} has a negative dimension in its shape {}", where, shape_text(shape)));
    if (d != 0 && count > limit / static_cast<std::uint64_t>(d)) {
      bad_request(fmt::format("{} declares the shape {}: more than the limit of {} values a tensor", where,
                              shape_text(shape), limit));
    }
    count *= static_cast<std::uint64_t>(d);
  }
  if (count > limit) {
    bad_request(
        fmt::format("{} declares the shape {}: more than the limit of {} values", where, shape_text(shape), limit));
  }
  return count;
}

/// Appends the numbers of `data` (flat or nested arrays, row-major) to `out`; nesting deeper than `depth` fails.
void flatten(const json& data, int depth, std::vector<float>& out, std::uint64_t count, const std::string& where) {
  if (depth < 0) bad_request(fmt::format("{}.data is nested deeper than its shape", where));
  for (const json& value : data) {
    if (value.is_array()) {
      flatten(value, depth - 1, out, count, where);
    } else if (value.is_number()) {
      if (out.size() >= count)
        bad_request(fmt::format("{}.data holds more than the {} values of its shape", where, count));
      out.push_back(static_cast<float>(value.get<double>()));
    } else {
      bad_request(fmt::format("{}.data holds {} where FP32 takes numbers", where, value.type_name()));
    }
  }
}

Tensor parse_input(const json& input, std::size_t index, std::string_view binary, std::size_t& binary_offset,
                   bool has_binary, const ParseLimits& limits) {
  std::string where = fmt::format("inputs[{}]", index);
  Tensor tensor;
  tensor.name = string_field(input, "name", where);
  where = fmt::format("input '{}'", tensor.name);
  const std::string datatype = string_field(input, "datatype", where);
  if (datatype != "FP32") {
    bad_request(fmt::format("{} has datatype {}; the model takes FP32", where, datatype));
  }
  const json* shape = member(input, "shape", where);
  if (shape == nullptr || !shape->is_array())
    bad_request(fmt::format("{} needs \"shape\": an array of integers", where));
  if (shape->size() > 8) bad_request(fmt::format("{} has a shape of {} dimensions", where, shape->size()));
  for (const json& d : *shape) {
    if (!d.is_number_integer()) bad_request(fmt::format("{}.shape holds {} where it takes integers", where, d.dump()));
    tensor.shape.push_back(d.get<std::int64_t>());
  }
  const std::uint64_t count = checked_count(tensor.shape, limits.max_tensor_elements, where);

  const json* parameters = member(input, "parameters", where);
  const json* binary_size = parameters ? member(*parameters, "binary_data_size", where + ".parameters") : nullptr;
  const json* data = member(input, "data", where);
  if (binary_size != nullptr) {
    if (!has_binary) {
      bad_request(
          fmt::format("{} has parameters.binary_data_size but the request has no "
                      "Inference-Header-Content-Length header",
                      where));
    }
    if (data != nullptr) bad_request(fmt::format("{} has both \"data\" and parameters.binary_data_size", where));
    if (!binary_size->is_number_unsigned()) {
      bad_request(fmt::format("{}.parameters.binary_data_size must be a non-negative integer", where));
    }
    const std::uint64_t size = binary_size->get<std::uint64_t>();
    if (size != count * sizeof(float)) {
      bad_request(fmt::format("{}: binary_data_size is {} bytes; its shape {} of FP32 takes {}", where, size,
                              shape_text(tensor.shape), count * sizeof(float)));
    }
    if (size > binary.size() - binary_offset) {
      bad_request(fmt::format("{}: binary_data_size is {} bytes but only {} remain in the body (truncated binary data)",
                              where, size, binary.size() - binary_offset));
    }
    tensor.values.resize(count);
    if (count > 0) std::memcpy(tensor.values.data(), binary.data() + binary_offset, size);
    binary_offset += size;
    return tensor;
  }
  if (data == nullptr || !data->is_array()) {
    bad_request(fmt::format("{} needs \"data\" (an array of numbers) or parameters.binary_data_size", where));
  }
  tensor.values.reserve(count);
  flatten(*data, static_cast<int>(tensor.shape.size()), tensor.values, count, where);
  if (tensor.values.size() != count) {
    bad_request(fmt::format("{}.data holds {} values; its shape {} takes {}", where, tensor.values.size(),
                            shape_text(tensor.shape), count));
  }
  return tensor;
}

std::size_t parse_header_length(std::string_view text, std::size_t body_size) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    bad_request(fmt::format("Inference-Header-Content-Length '{}' is not a byte count", text));
  }
  if (value > body_size) {
    bad_request(fmt::format("Inference-Header-Content-Length is {} but the body has only {} bytes", value, body_size));
  }
  return value;
}

}  // namespace

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string error_body(std::string_view message) {
  // A message may quote the request's bytes (a JSON parse error does), which need not be UTF-8.
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

InferRequest parse_infer_request(std::string_view body, std::optional<std::string_view> header_length,
                                 const ParseLimits& limits) {
  std::string_view text = body;
  std::string_view binary;
  if (header_length) {
    const std::size_t length = parse_header_length(*header_length, body.size());
    text = body.substr(0, length);
    binary = body.substr(length);
  }
  // The callback bounds what the JSON may make the parser allocate: all numbers together, at most the tensor limit
  // (and a margin for the shapes), before the tree grows past that.
  std::uint64_t numbers = 0;
  const std::uint64_t max_numbers = limits.max_tensor_elements + 4096;
  const json::parser_callback_t bound = [&](int, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::value && value.is_number() && ++numbers > max_numbers) {
      bad_request(fmt::format("the request's JSON holds more than {} numbers (the tensor limit)", max_numbers));
    }
    return true;
  };
  json document;
  try {
    document = json::parse(text.begin(), text.end(), bound);
  } catch (const json::parse_error& e) {
    bad_request(fmt::format("invalid JSON: {}", e.what()));
  }

  InferRequest request;
  if (const json* id = member(document, "id", "the request")) {
    if (!id->is_string()) bad_request("the request's \"id\" must be a string");
    request.id = id->get<std::string>();
  }
  if (const json* parameters = member(document, "parameters", "the request")) {
    if (member(*parameters, "classification", "the request's parameters")) {
      bad_request("the classification extension is not supported");
    }
  }
  request.binary_outputs = bool_parameter(document, "binary_data_output", "the request");
  const json* inputs = member(document, "inputs", "the request");
  if (inputs == nullptr || !inputs->is_array() || inputs->empty()) {
    bad_request("the request needs \"inputs\": an array of tensors");
  }
  std::size_t binary_offset = 0;
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    request.inputs.push_back(parse_input((*inputs)[i], i, binary, binary_offset, header_length.has_value(), limits));
  }
  if (binary_offset != binary.size()) {
    bad_request(
        fmt::format("the body has {} bytes of binary data after the JSON; the inputs' binary_data_size add up "
                    "to {} (wrong Inference-Header-Content-Length or content length)",
                    binary.size(), binary_offset));
  }
  if (const json* outputs = member(document, "outputs", "the request")) {
    if (!outputs->is_array()) bad_request("the request's \"outputs\" must be an array");
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      const std::string where = fmt::format("outputs[{}]", i);
      RequestedOutput output;
      output.name = string_field((*outputs)[i], "name", where);
      output.binary = bool_parameter((*outputs)[i], "binary_data", where);
      for (const RequestedOutput& earlier : request.outputs) {
        if (earlier.name == output.name) bad_request(fmt::format("output '{}' is asked for twice", output.name));
      }
      request.outputs.push_back(std::move(output));
    }
  }
  return request;
}

EncodedResponse encode_infer_response(const std::string& model_name, const std::string& model_version,
                                      const std::string& id, const std::vector<Tensor>& outputs,
                                      const std::vector<bool>& binary) {
  json document = {{"model_name", model_name}, {"model_version", model_version}};
  if (!id.empty()) document["id"] = id;
  json out = json::array();
  std::string tail;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    json entry = {{"name", t.name}, {"datatype", "FP32"}, {"shape", t.shape}};
    if (binary.at(k)) {
      const std::size_t bytes = t.values.size() * sizeof(float);
      entry["parameters"] = {{"binary_data_size", bytes}};
      tail.append(reinterpret_cast<const char*>(t.values.data()), bytes);
    } else {
      json data = json::array();
      data.get_ref<json::array_t&>().reserve(t.values.size());
      for (float v : t.values) data.push_back(v);
      entry["data"] = std::move(data);
    }
    out.push_back(std::move(entry));
  }
  document["outputs"] = std::move(out);
  EncodedResponse response;
  response.body = document.dump();
  if (!tail.empty() || std::find(binary.begin(), binary.end(), true) != binary.end()) {
    response.header_length = response.body.size();
    response.body += tail;
  }
  return response;
}

}  // namespace corgy::serve
