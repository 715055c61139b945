// load_onnx: parse (protobuf, with the ONNX project's schema), check (sizes, graph structure, the ONNX checker),
// then map every node that an output needs through the operator table of onnx_ops.cpp.
#include "corgy/io/onnx.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "corgy/error.h"
#include "corgy/io/onnx_graph.h"
#include "corgy/page_memory.h"

namespace corgy {

namespace {

using onnx_import::Constant;
using onnx_import::dims_text;
using onnx_import::Graph;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

/// Checks a model's size against the limits and what protobuf can read.
void check_model_size(std::size_t bytes, const std::string& source, const LoadLimits& limits) {
  if (bytes > limits.max_model_bytes) {
    throw Error(
        fmt::format("{}: {} bytes, more than LoadLimits::max_model_bytes ({}); raise the limit in the "
                    "loader's options if the file is trusted",
                    source, bytes, limits.max_model_bytes));
  }
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw Error(
        fmt::format("{}: {} bytes; protobuf reads ONNX files up to 2 GB (larger models keep their weights "
                    "in external data, which corgy does not read)",
                    source, bytes));
  }
}

/// Parses `bytes` bytes of `stream` as a ModelProto.
onnx::ModelProto parse(google::protobuf::io::CodedInputStream& stream, std::size_t bytes, const std::string& source) {
  onnx::ModelProto model;
  stream.SetRecursionLimit(64);
  if (bytes == 0 || !model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    throw Error(
        fmt::format("{}: not an ONNX model, or a truncated one ({} bytes that protobuf cannot read as "
                    "onnx.ModelProto)",
                    source, bytes));
  }
  if (!model.has_graph()) throw Error(fmt::format("{}: not an ONNX model (it has no graph)", source));
  return model;
}

onnx::ModelProto parse(std::span<const std::byte> bytes, const std::string& source, const LoadLimits& limits) {
  check_model_size(bytes.size(), source, limits);
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  return parse(stream, bytes.size(), source);
}

/// Reads the file through a stream of small buffers rather than a memory map: a map's pages count in the process's
/// resident memory alongside the parsed copy of the weights, which doubled the peak while loading.
onnx::ModelProto parse_file(const std::string& path, const LoadLimits& limits) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open the ONNX model: {}", path, std::strerror(errno)));
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    throw Error(fmt::format("{}: cannot read the ONNX model: not a regular file", path));
  }
  try {
    check_model_size(static_cast<std::size_t>(info.st_size), path, limits);
    google::protobuf::io::FileInputStream file(fd, 1 << 20);
    google::protobuf::io::CodedInputStream stream(&file);
    stream.SetTotalBytesLimit(INT_MAX);
    onnx::ModelProto model = parse(stream, static_cast<std::size_t>(info.st_size), path);
    close(fd);
    return model;
  } catch (...) {
    close(fd);
    throw;
  }
}

int default_opset(const onnx::ModelProto& model, const std::string& source) {
  int opset = 0;
  for (const onnx::OperatorSetIdProto& import : model.opset_import()) {
    if (is_default_domain(import.domain())) opset = static_cast<int>(import.version());
  }
  if (opset == 0) throw Error(fmt::format("{}: imports no opset of the default ONNX domain", source));
  if (opset < onnx_min_opset || opset > onnx_max_opset) {
    throw Error(
        fmt::format("{}: opset {}; corgy reads opsets {} to {}", source, opset, onnx_min_opset, onnx_max_opset));
  }
  return opset;
}

std::string node_label(const onnx::NodeProto& node) {
  return fmt::format("'{}' ({})", node.name().empty() ? std::string("(unnamed)") : node.name(), node.op_type());
}

/// Every value a node reads must come from a node, the graph inputs or the initializers, and each value from one
/// source; nodes must not form a cycle. Returns the nodes in an order where each comes after its producers.
std::vector<const onnx::NodeProto*> check_structure(const onnx::GraphProto& graph, const std::string& source) {
  std::unordered_map<std::string, int> producer;  // value -> node index, -1 for graph inputs and initializers
  auto define = [&](const std::string& name, int node, std::string_view what) {
    if (name.empty()) return;
    if (!producer.emplace(name, node).second) {
      throw Error(fmt::format("{}: value '{}' is defined twice (again by {})", source, name, what));
    }
  };
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    define(tensor.name(), -1, "an initializer");
    initializer_names.insert(tensor.name());
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    // Before IR version 4 initializers were listed among the inputs too.
    if (!initializer_names.contains(input.name())) define(input.name(), -1, "a graph input");
  }
  const int count = graph.node_size();
  for (int i = 0; i < count; ++i) {
    for (const std::string& output : graph.node(i).output()) define(output, i, "node " + node_label(graph.node(i)));
  }
  std::vector<std::vector<int>> readers(static_cast<std::size_t>(count));
  std::vector<int> waiting(static_cast<std::size_t>(count), 0);
  for (int i = 0; i < count; ++i) {
    for (const std::string& input : graph.node(i).input()) {
      if (input.empty()) continue;
      const auto it = producer.find(input);
      if (it == producer.end()) {
        throw Error(
            fmt::format("{}: node {} reads '{}', which no node computes and which is neither a graph input "
                        "nor an initializer (a dangling input)",
                        source, node_label(graph.node(i)), input));
      }
      if (it->second >= 0) {
        readers[static_cast<std::size_t>(it->second)].push_back(i);
        ++waiting[static_cast<std::size_t>(i)];
      }
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (!producer.contains(output.name())) {
      throw Error(fmt::format("{}: graph output '{}' is computed by no node", source, output.name()));
    }
  }
  // Kahn's algorithm, keeping the file's order among ready nodes.
  std::vector<const onnx::NodeProto*> order;
  std::set<int> ready;
  for (int i = 0; i < count; ++i) {
    if (waiting[static_cast<std::size_t>(i)] == 0) ready.insert(i);
  }
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(&graph.node(i));
    for (int reader : readers[static_cast<std::size_t>(i)]) {
      if (--waiting[static_cast<std::size_t>(reader)] == 0) ready.insert(reader);
    }
  }
  if (order.size() != static_cast<std::size_t>(count)) {
    // Walk back from a waiting node through waiting producers until a node repeats: that is a cycle.
    int start = 0;
    while (waiting[static_cast<std::size_t>(start)] == 0) ++start;
    std::vector<int> path{start};
    std::map<int, std::size_t> seen{{start, 0}};
    while (true) {
      int next = -1;
      for (const std::string& input : graph.node(path.back()).input()) {
        const auto it = producer.find(input);
        if (it != producer.end() && it->second >= 0 && waiting[static_cast<std::size_t>(it->second)] > 0) {
          next = it->second;
          break;
        }
      }
      if (const auto it = seen.find(next); it != seen.end()) {
        std::string cycle;
        for (std::size_t k = path.size(); k-- > it->second;) cycle += node_label(graph.node(path[k])) + " -> ";
        throw Error(fmt::format("{}: the graph has a cycle: {}{}", source, cycle, node_label(graph.node(next))));
      }
      seen.emplace(next, path.size());
      path.push_back(next);
    }
  }
  return order;
}

/// The ONNX checker (Debian's libonnx) on the whole model, when it knows the model's opset: Debian 12's ONNX 1.12
/// knows opsets up to 17; opset-18 models get corgy's own checks only.
void run_checker(const onnx::ModelProto& model, int opset, const std::string& source) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = known.find("");
  if (it == known.end() || opset > it->second.second) return;
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: the ONNX checker rejects the model: {}", source, e.what()));
  }
}

/// The nodes the graph outputs depend on, in order.
std::vector<const onnx::NodeProto*> live_nodes(const onnx::GraphProto& graph,
                                               const std::vector<const onnx::NodeProto*>& order) {
  std::unordered_set<std::string> needed;
  for (const onnx::ValueInfoProto& output : graph.output()) needed.insert(output.name());
  std::vector<const onnx::NodeProto*> live;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const onnx::NodeProto& node = **it;
    if (std::none_of(node.output().begin(), node.output().end(),
                     [&](const std::string& output) { return needed.contains(output); })) {
      continue;
    }
    live.push_back(&node);
    for (const std::string& input : node.input()) needed.insert(input);
  }
  std::reverse(live.begin(), live.end());
  return live;
}

/// Every node whose operator corgy cannot map, all in one message.
void check_operators(const std::vector<const onnx::NodeProto*>& nodes, int opset, const std::string& source) {
  std::vector<std::string> unsupported;
  std::set<std::string> kinds;
  for (const onnx::NodeProto* node : nodes) {
    const bool known = is_default_domain(node->domain()) && onnx_import::find_operator(node->op_type(), opset);
    if (known) continue;
    const std::string op = is_default_domain(node->domain()) ? node->op_type() : node->domain() + "." + node->op_type();
    unsupported.push_back(fmt::format("node {} ({}, opset {})",
                                      node->name().empty() ? "(unnamed)" : "'" + node->name() + "'", op, opset));
    kinds.insert(op);
  }
  if (unsupported.empty()) return;
  throw Error(
      fmt::format("{}: {} node{} with operators corgy does not support ({}): {}; corgy-run --list-ops lists "
                  "the supported ones",
                  source, unsupported.size(), unsupported.size() == 1 ? "" : "s", fmt::join(kinds, ", "),
                  fmt::join(unsupported, ", ")));
}

std::vector<std::int64_t> value_dims(const onnx::ValueInfoProto& value, const std::string& source,
                                     const LoadLimits& limits) {
  if (!value.type().has_tensor_type()) {
    throw Error(fmt::format("{}: graph input '{}' is not a tensor", source, value.name()));
  }
  const onnx::TypeProto::Tensor& tensor = value.type().tensor_type();
  if (tensor.elem_type() != onnx::TensorProto::FLOAT) {
    throw Error(
        fmt::format("{}: graph input '{}' has element type {}; corgy takes float32 inputs", source, value.name(),
                    onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(tensor.elem_type()))));
  }
  std::vector<std::int64_t> dims;
  for (const onnx::TensorShapeProto::Dimension& dim : tensor.shape().dim()) {
    dims.push_back(dim.has_dim_value() && dim.dim_value() > 0 ? dim.dim_value() : -1);
  }
  if (dims.size() != 4 && dims.size() != 2) {
    throw Error(fmt::format("{}: graph input '{}' is {}; corgy takes (N, C, H, W) or (N, F) inputs", source,
                            value.name(), dims_text(dims)));
  }
  // One input of the declared size (batch 1 where it is free) must fit the limits; this also keeps every shape
  // computed from it far from overflowing.
  std::vector<std::int64_t> one = dims;
  one[0] = 1;
  for (std::int64_t& d : one) d = std::max<std::int64_t>(d, 1);
  check_tensor_bytes(limits, source, fmt::format("graph input '{}' {}", value.name(), dims_text(dims)),
                     float32_bytes(one));
  return dims;
}

/// Checks every initializer's declared size against its data and the limits before any is converted for use (each
/// is read and dropped again: the checks must come first, and one tensor at a time costs no memory).
void check_initializers(const onnx::GraphProto& graph, const LoadLimits& limits, const std::string& source,
                        std::unordered_set<std::string>& names) {
  ModelBytes total(limits, source);
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    const std::string what = fmt::format("{}: initializer '{}'", source, tensor.name());
    const Constant constant = onnx_import::read_tensor(tensor, limits, what);
    total.add(what, float32_bytes(constant.dims));
    names.insert(tensor.name());
  }
}

/// The initializers as constants, each tensor's data in the protobuf freed once converted, so that the weights are
/// held once (not in the protobuf and in the constants) while the layers are built.
std::unordered_map<std::string, Constant> take_initializers(onnx::GraphProto& graph, const LoadLimits& limits,
                                                            const std::string& source) {
  std::unordered_map<std::string, Constant> constants;
  for (onnx::TensorProto& tensor : *graph.mutable_initializer()) {
    constants.emplace(tensor.name(), onnx_import::read_tensor(
                                         tensor, limits, fmt::format("{}: initializer '{}'", source, tensor.name())));
    std::string().swap(*tensor.mutable_raw_data());  // clear() would keep the capacity
    tensor.clear_float_data();
  }
  return constants;
}

/// The model of a parsed file (load_onnx_from_memory, after parse()). Its initializers' data is taken from `proto`.
OnnxModel build_model(onnx::ModelProto& proto, const std::string& name, const OnnxOptions& options) {
  OnnxModel result;
  result.source = name;
  result.producer = proto.producer_name() + (proto.producer_version().empty() ? "" : " " + proto.producer_version());
  result.opset = default_opset(proto, name);
  for (const onnx::StringStringEntryProto& entry : proto.metadata_props()) result.metadata[entry.key()] = entry.value();
  const onnx::GraphProto& graph = proto.graph();
  if (graph.sparse_initializer_size() > 0) throw Error(fmt::format("{}: sparse initializers are not supported", name));

  std::unordered_set<std::string> initializers;
  check_initializers(graph, options.limits, name, initializers);
  const std::vector<const onnx::NodeProto*> order = check_structure(graph, name);
  // Unsupported operators first: the list of all of them says more than the checker's view of one of their nodes.
  const std::vector<const onnx::NodeProto*> live = live_nodes(graph, order);
  check_operators(live, result.opset, name);
  run_checker(proto, result.opset, name);
  std::unordered_map<std::string, Constant> constants = take_initializers(*proto.mutable_graph(), options.limits, name);

  // The one graph input that is not an initializer.
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (!initializers.contains(input.name())) inputs.push_back(&input);
  }
  if (inputs.size() != 1) {
    throw Error(fmt::format("{}: {} graph inputs; corgy runs models with one input", name, inputs.size()));
  }
  result.input = {inputs[0]->name(), value_dims(*inputs[0], name, options.limits)};

  Graph builder(result.model, name, result.opset, options.limits);
  for (auto& [value_name, constant] : constants) builder.add_constant(value_name, std::move(constant));
  builder.add_input(result.input.name, result.input.dims);
  std::unordered_map<std::string, int> uses;
  for (const onnx::NodeProto* node : live) {
    for (const std::string& input : node->input()) {
      if (!input.empty()) ++uses[input];
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) uses[output.name()] += 1 << 20;  // read forever
  builder.set_use_counts(std::move(uses));
  for (const onnx::NodeProto* node : live) builder.map_node(*node);

  for (const onnx::ValueInfoProto& output : graph.output()) {
    OnnxTensorInfo info{output.name(), {}};
    const int layer = builder.output_layer(output.name(), info.dims);
    result.outputs.push_back(std::move(info));
    result.output_layers.push_back(layer);
  }
  for (int layer : result.output_layers) result.model.mark_output(layer);
  return result;
}

}  // namespace

namespace {

/// The model of `parsed` (a parsed ModelProto), then the parser's freed heap pages given back (page_memory.h).
template <typename Parse>
OnnxModel build_and_release(const Parse& parsed, const std::string& name, const OnnxOptions& options) {
  OnnxModel model = [&] {
    onnx::ModelProto proto = parsed();
    return build_model(proto, name, options);
  }();
  release_free_heap_pages();
  return model;
}

}  // namespace

OnnxModel load_onnx_from_memory(std::span<const std::byte> bytes, const std::string& name, const OnnxOptions& options) {
  return build_and_release([&] { return parse(bytes, name, options.limits); }, name, options);
}

OnnxModel load_onnx(const std::string& path, const OnnxOptions& options) {
  return build_and_release([&] { return parse_file(path, options.limits); }, path, options);
}

// --- OnnxModel ------------------------------------------------------------------------------------------------------

Shape OnnxModel::input_shape(int batch) const {
  const std::vector<std::int64_t>& d = input.dims;
  for (std::size_t a = 1; a < d.size(); ++a) {
    if (d[a] < 0) {
      throw Error(fmt::format("{}: input '{}' {} leaves dimension {} free: give the input shape yourself", source,
                              input.name, dims_text(d), a));
    }
  }
  if (d.size() == 2) return {batch, static_cast<int>(d[1]), 1, 1};
  return {batch, static_cast<int>(d[1]), static_cast<int>(d[2]), static_cast<int>(d[3])};
}

void OnnxModel::check_input(const Shape& shape) const {
  const std::vector<std::int64_t>& d = input.dims;
  const std::int64_t given[4] = {shape.n, shape.c, shape.h, shape.w};
  bool fits = d.size() == 4 || (shape.h == 1 && shape.w == 1);
  for (std::size_t a = 1; a < d.size() && fits; ++a) fits = d[a] < 0 || d[a] == given[a];
  if (!fits) {
    throw Error(fmt::format("{}: input '{}' is {} (any batch), got {}", source, input.name, dims_text(d), shape.str()));
  }
}

const Variable& OnnxModel::forward(const Variable& x) {
  check_input(x.shape());
  model.forward(x);
  return model.output(output_layers.at(0));
}

const Variable& OnnxModel::output(std::size_t k) const {
  if (k >= output_layers.size()) {
    throw Error(fmt::format("{}: output {} asked for; the model has {}", source, k, output_layers.size()));
  }
  return model.output(output_layers[k]);
}

std::vector<std::int64_t> OnnxModel::output_dims(std::size_t k) const {
  const Shape& s = output(k).shape();
  const std::vector<std::int64_t>& declared = outputs[k].dims;
  if (declared.size() == 2) return {s.n, static_cast<std::int64_t>(s.image_count())};
  // Ranks 1 and 3 (corgy/tensor_dims.h) keep their dims; the Variable holds them folded. Ranks 5 and 6 stay the
  // folded 4-D shape, which .npy writers (save_npy: ranks 1 to 4) and the Python binding take.
  if (declared.size() < 4 && !declared.empty() &&
      std::all_of(declared.begin() + 1, declared.end(), [](std::int64_t d) { return d > 0; })) {
    std::vector<std::int64_t> dims = declared;
    dims[0] = s.n;
    return dims;
  }
  return {s.n, s.c, s.h, s.w};
}

const Variable& OnnxModel::output(std::string_view name) const {
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].name == name) return output(k);
  }
  throw Error(fmt::format("{}: no output named '{}'", source, name));
}

std::span<const OnnxOperatorSupport> onnx_supported_operators() {
  static const std::vector<OnnxOperatorSupport> list = [] {
    std::vector<OnnxOperatorSupport> entries;
    for (const onnx_import::OperatorMapping& m : onnx_import::operator_table()) {
      entries.push_back({m.op_type, m.first_opset, m.last_opset, m.becomes});
    }
    return entries;
  }();
  return list;
}

}  // namespace corgy
