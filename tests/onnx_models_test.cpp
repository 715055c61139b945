// ONNX models against ONNX Runtime or PyTorch, on every backend; and every way a file can be wrong.
//
// tests/fixtures/onnx/<case>/ holds model.onnx and input.npy (tools/make_onnx_models.py: networks exported from
// PyTorch at two opsets; tools/make_onnx_op_models.py: small hand-built graphs for single operators) and ONNX
// Runtime's outputs output_<k>.npy (tools/onnx_reference.mjs); the torch_*_opset13 cases
// (tools/make_onnx_torch_op_models.py: ConvTranspose and Resize as torch.onnx.export writes them) hold PyTorch's. Each
// case loads, runs on each backend and must match every output within 1e-4 of its largest magnitude. The error cases
// build broken models with the ONNX protobuf classes themselves.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "corgy/model/fusion.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> onnx_cases() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(fixture_path("onnx"))) {
    if (fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class OnnxModelOnBackend : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OnnxModelOnBackend, MatchesOnnxRuntime) {
  const auto& [name, backend] = GetParam();
  // The sanitized build runs the Vulkan column on every other model: there it took 26 s of CPU time, now 17 (lavapipe
  // compiles each model's pipelines), in CI's largest step. The Release run takes every model on Vulkan with the
  // validation layer, the sanitized run every model on the CPU backends, and the layer harness every kind of layer on
  // Vulkan.
  if (CORGY_TESTS_SANITIZED && backend.starts_with("vulkan")) {
    const std::vector<std::string> names = onnx_cases();
    if ((std::find(names.begin(), names.end(), name) - names.begin()) % 2 == 1) {
      GTEST_SKIP() << "sanitized build: the Vulkan column takes every other model";
    }
  }
  const std::string directory = fixture_path("onnx/" + name);
  OnnxModel net = load_onnx(directory + "/model.onnx");
  net.model.set_backend(make_backend(backend, {.validation = kSweepValidation}));
  Variable input = load_npy(directory + "/input.npy");
  // A 2-D (N, F) array reads as (1, 1, N, F); corgy's batch of vectors is (N, F, 1, 1).
  if (net.input.dims.size() == 2) input.reshape({input.shape().h, input.shape().w, 1, 1});
  net.forward(input);
  ASSERT_FALSE(net.outputs.empty());
  // ONNX Runtime's output shapes (outputs.json; the torch_* cases' reference is PyTorch's and has none): corgy's
  // declared shapes must be the same, a classifier's (N, classes) too.
  std::vector<std::vector<std::int64_t>> reference_shapes;
  if (std::ifstream json(directory + "/outputs.json"); json) {
    // Parsed into a variable: a range-for over parse(json).at(...) would walk a temporary destroyed before the loop.
    const nlohmann::json parsed = nlohmann::json::parse(json);
    for (const nlohmann::json& output : parsed.at("outputs")) {
      reference_shapes.push_back(output.at("shape").get<std::vector<std::int64_t>>());
    }
  }
  for (std::size_t k = 0; k < net.outputs.size(); ++k) {
    if (k < reference_shapes.size()) {
      EXPECT_EQ(net.output_dims(k), reference_shapes[k]) << name << " output " << k;
    }
    Variable expected = load_npy(fmt::format("{}/output_{}.npy", directory, k));
    const Variable& actual = net.output(k);
    // ONNX Runtime's (N, F) is corgy's (N, F, 1, 1); load_npy reads it as (1, 1, N, F).
    ASSERT_EQ(expected.count(), actual.count()) << name << " output " << k << " " << actual.shape().str();
    expected.reshape(actual.shape());
    EXPECT_TRUE(outputs_match(actual, expected))
        << name << " output " << k << " ('" << net.outputs[k].name << "') on " << backend;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryModel, OnnxModelOnBackend,
                         ::testing::Combine(::testing::ValuesIn(onnx_cases()), ::testing::ValuesIn(all_backends())),
                         [](const ::testing::TestParamInfo<OnnxModelOnBackend::ParamType>& param_info) {
                           return fmt::format("{}_on_{}", std::get<0>(param_info.param), std::get<1>(param_info.param));
                         });

TEST(OnnxModels, FusesBatchNormAndActivationsIntoTheirConvolutions) {
  // tiny_yolo_v2: 9 convolutions, 6 max pools, the edge pad; no layer for the batch norms or leaky ReLUs.
  OnnxModel net = load_onnx(fixture_path("onnx/tiny_yolo_v2_opset9/model.onnx"));
  int convolutions = 0;
  for (int i = 0; i < net.model.size(); ++i) {
    const std::string_view type = net.model.layer(i).type();
    if (type == "conv2d") ++convolutions;
    EXPECT_TRUE(type == "conv2d" || type == "maxpool2d" || type == "pad") << net.model.layer(i).describe();
  }
  EXPECT_EQ(convolutions, 9);
  EXPECT_EQ(net.model.size(), 9 + 6 + 1);
  EXPECT_EQ(net.input.name, "input");
  EXPECT_EQ(net.input.dims, (std::vector<std::int64_t>{1, 3, 96, 128}));
  EXPECT_EQ(net.input_shape(4), (Shape{4, 3, 96, 128}));
}

TEST(OnnxModels, ShuffleNetUnitsBecomeChannelShufflesAndSlices) {
  // Two units: each a channel shuffle (Reshape -> Transpose -> Reshape); the plain unit's chunk is two Slices (one
  // unread by the branch: its half goes straight to the Concat); the torch.split after them, three ChannelSlices.
  OnnxModel net = load_onnx(fixture_path("onnx/torch_shufflenet_units_opset13/model.onnx"));
  int shuffles = 0;
  int slices = 0;
  for (int i = 0; i < net.model.size(); ++i) {
    const std::string_view type = net.model.layer(i).type();
    shuffles += type == "channel_shuffle";
    slices += type == "channel_slice";
  }
  EXPECT_EQ(shuffles, 2);
  EXPECT_EQ(slices, 2 + 3);
}

TEST(OnnxModels, ConvNeXtStyleBlockFusesIntoLayerNormAndGelu) {
  // The exported LayerNorm (ReduceMean ... Add) and GELU (Div, Erf, Add, Mul, Mul) map to layers of any rank that the
  // model-level rewrites turn into one LayerNorm and one GELU; MatMul by weights on the 4-D tensor, TensorLinear.
  OnnxModel net = load_onnx(fixture_path("onnx/op_layernorm_gelu_last_axis/model.onnx"));
  std::vector<FusionNode> nodes;
  for (int i = 0; i < net.model.size(); ++i) {
    nodes.push_back({&net.model.layer(i), net.model.inputs_of(i), i + 1 == net.model.size()});
  }
  std::vector<std::string> computed;
  const FusedGraph graph = fuse_layers(std::move(nodes));
  for (const FusionNode& node : graph.nodes) {
    if (!node.absorbed) computed.push_back(std::string(node.layer->type()));
  }
  EXPECT_EQ(std::count(computed.begin(), computed.end(), "layer_norm"), 1)
      << fmt::format("{}", fmt::join(computed, ", "));
  EXPECT_EQ(std::count(computed.begin(), computed.end(), "gelu"), 1) << fmt::format("{}", fmt::join(computed, ", "));
  EXPECT_EQ(std::count(computed.begin(), computed.end(), "unary"), 0);
  EXPECT_EQ(std::count(computed.begin(), computed.end(), "tensor_linear"), 2);

  // GELU's tanh form as PyTorch exports it: one Unary gelu_tanh reading the input.
  OnnxModel tanh_form = load_onnx(fixture_path("onnx/op_gelu_tanh_export/model.onnx"));
  std::vector<FusionNode> tanh_nodes;
  for (int i = 0; i < tanh_form.model.size(); ++i) {
    tanh_nodes.push_back({&tanh_form.model.layer(i), tanh_form.model.inputs_of(i), i + 1 == tanh_form.model.size()});
  }
  const FusedGraph tanh_graph = fuse_layers(std::move(tanh_nodes));
  EXPECT_EQ(tanh_graph.nodes.back().layer->describe(), "unary gelu_tanh");
  EXPECT_EQ(tanh_graph.nodes.back().inputs, std::vector<int>{Sequential::model_input});
}

TEST(OnnxModels, RunAnyBatchButCheckFixedDimensions) {
  OnnxModel net = load_onnx(fixture_path("onnx/mnist_opset17/model.onnx"));
  const Variable input = load_npy(fixture_path("onnx/mnist_opset17/input.npy"));  // (2, 1, 28, 28)
  const Variable expected = net.forward(input).clone();
  // The same two digits in a batch of 3 (the file was exported at batch 2): the same logits.
  Variable three(Shape{3, 1, 28, 28});
  std::copy(input.data(), input.data() + input.count(), three.data());
  const Variable& logits = net.forward(three);
  for (std::size_t i = 0; i < expected.count(); ++i) EXPECT_EQ(logits.data()[i], expected.data()[i]);
  EXPECT_THROW(net.forward(Variable(Shape{1, 1, 32, 32})), Error);
  EXPECT_THROW(net.output("no such output"), Error);
  EXPECT_EQ(&net.output("output"), &net.output(0));
}

TEST(OnnxModels, ListsTheSupportedOperators) {
  std::vector<std::string_view> names;
  for (const OnnxOperatorSupport& op : onnx_supported_operators()) names.push_back(op.op_type);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (std::string_view required : {"Conv",
                                    "Gemm",
                                    "MatMul",
                                    "Relu",
                                    "LeakyRelu",
                                    "PRelu",
                                    "Sigmoid",
                                    "Tanh",
                                    "Clip",
                                    "HardSigmoid",
                                    "HardSwish",
                                    "MaxPool",
                                    "AveragePool",
                                    "GlobalAveragePool",
                                    "GlobalMaxPool",
                                    "ReduceMean",
                                    "ReduceMax",
                                    "BatchNormalization",
                                    "InstanceNormalization",
                                    "Add",
                                    "Mul",
                                    "Sub",
                                    "Div",
                                    "Concat",
                                    "Flatten",
                                    "Reshape",
                                    "Squeeze",
                                    "Unsqueeze",
                                    "Resize",
                                    "Upsample",
                                    "ConvTranspose",
                                    "Pad",
                                    "Softmax",
                                    "Identity",
                                    "Dropout",
                                    "Constant"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
}

// --- broken files -------------------------------------------------------------------------------------------------

/// A valid model to break: input (1, 3, 8, 8) -> Conv 3x3 (4 filters) -> Relu -> output.
onnx::ModelProto small_model(int opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("small");
  auto value = [](onnx::ValueInfoProto* info, const std::string& name, std::vector<std::int64_t> dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(graph.add_input(), "x", {1, 3, 8, 8});
  value(graph.add_output(), "y", {1, 4, 6, 6});
  onnx::TensorProto& weights = *graph.add_initializer();
  weights.set_name("w");
  weights.set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : {4, 3, 3, 3}) weights.add_dims(d);
  for (int i = 0; i < 4 * 3 * 3 * 3; ++i) weights.add_float_data(0.01f * static_cast<float>(i % 7 - 3));
  onnx::NodeProto& conv = *graph.add_node();
  conv.set_name("conv");
  conv.set_op_type("Conv");
  conv.add_input("x");
  conv.add_input("w");
  conv.add_output("c");
  onnx::NodeProto& relu = *graph.add_node();
  relu.set_name("relu");
  relu.set_op_type("Relu");
  relu.add_input("c");
  relu.add_output("y");
  return model;
}

std::vector<std::byte> bytes_of(const onnx::ModelProto& model) {
  const std::string text = model.SerializeAsString();
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

/// The message of the corgy::Error that loading `bytes` throws, or "(no error)".
std::string load_error(const std::vector<std::byte>& bytes, const OnnxOptions& options = {}) {
  try {
    load_onnx_from_memory(bytes, "broken.onnx", options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string load_error(const onnx::ModelProto& model, const OnnxOptions& options = {}) {
  return load_error(bytes_of(model), options);
}

TEST(OnnxErrors, TheSmallModelLoadsAndRuns) {
  OnnxModel net = load_onnx_from_memory(bytes_of(small_model()), "small.onnx");
  ASSERT_EQ(net.model.size(), 1);  // the ReLU is fused into the convolution
  EXPECT_EQ(net.model.layer(0).describe(), "conv2d 3x3/1 pad 0, 3->4, relu");
  Variable x(Shape{1, 3, 8, 8});
  x.fill(1.0f);
  EXPECT_EQ(net.forward(x).shape(), (Shape{1, 4, 6, 6}));
}

TEST(OnnxErrors, UnsupportedOperatorsAreAllListedAtOnce) {
  onnx::ModelProto model = small_model();
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.mutable_node(1)->set_op_type("Einsum");
  graph.mutable_node(1)->set_output(0, "e");
  onnx::NodeProto& second = *graph.add_node();
  second.set_name("odd_one");
  second.set_op_type("NonMaxSuppression");
  second.add_input("e");
  second.add_output("y");
  const std::string error = load_error(model);
  EXPECT_TRUE(contains(error, "broken.onnx: 2 nodes with operators corgy does not support")) << error;
  EXPECT_TRUE(contains(error, "node 'relu' (Einsum, opset 13)")) << error;
  EXPECT_TRUE(contains(error, "node 'odd_one' (NonMaxSuppression, opset 13)")) << error;
  EXPECT_TRUE(contains(error, "--list-ops")) << error;
}

TEST(OnnxErrors, OperatorsOfOtherDomainsAreUnsupported) {
  onnx::ModelProto model = small_model();
  model.mutable_graph()->mutable_node(1)->set_domain("com.microsoft");
  model.add_opset_import()->set_domain("com.microsoft");
  model.mutable_opset_import(1)->set_version(1);
  const std::string error = load_error(model);
  EXPECT_TRUE(contains(error, "node 'relu' (com.microsoft.Relu, opset 13)")) << error;
}

TEST(OnnxErrors, TruncatedFilesAreRejected) {
  const std::vector<std::byte> whole = bytes_of(small_model());
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, whole.size() / 3, whole.size() / 2, whole.size() - 1}) {
    const std::vector<std::byte> part(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(size));
    const std::string error = load_error(part);
    EXPECT_TRUE(contains(error, "broken.onnx: ")) << size << ": " << error;
  }
  // From a file: the message names it.
  const std::string path = (fs::temp_directory_path() / "corgy_truncated.onnx").string();
  {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(whole.data()), static_cast<std::streamsize>(whole.size() / 2));
  }
  try {
    load_onnx(path);
    ADD_FAILURE() << "a truncated file loaded";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), path + ": not an ONNX model, or a truncated one")) << e.what();
  }
  fs::remove(path);
  EXPECT_THROW(load_onnx("/nonexistent/model.onnx"), Error);
}

TEST(OnnxErrors, CyclesAreNamed) {
  onnx::ModelProto model = small_model();
  onnx::GraphProto& graph = *model.mutable_graph();
  // conv reads x and a value computed after it: conv -> add -> relu -> conv.
  onnx::NodeProto& conv = *graph.mutable_node(0);
  conv.set_input(0, "looped");
  onnx::NodeProto& add = *graph.add_node();
  add.set_name("add");
  add.set_op_type("Add");
  add.add_input("y");
  add.add_input("x");
  add.add_output("looped");
  const std::string error = load_error(model);
  EXPECT_TRUE(contains(error, "broken.onnx: the graph has a cycle")) << error;
  EXPECT_TRUE(contains(error, "'conv' (Conv)")) << error;
  EXPECT_TRUE(contains(error, "'add' (Add)")) << error;
}

/// A scalar initializer `name` of `value` (float or int64).
void add_scalar(onnx::GraphProto& graph, const std::string& name, float value, bool integer = false) {
  onnx::TensorProto& t = *graph.add_initializer();
  t.set_name(name);
  t.set_data_type(integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
  if (integer) {
    t.add_int64_data(static_cast<std::int64_t>(value));
  } else {
    t.add_float_data(value);
  }
}

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, std::vector<std::string> inputs,
                          const std::string& output) {
  onnx::NodeProto& node = *graph.add_node();
  node.set_name(output);
  node.set_op_type(op);
  for (const std::string& input : inputs) node.add_input(input);
  node.add_output(output);
  return node;
}

TEST(OnnxModels, RangeOfConstantsFoldsAndAFreeBatchShapeGivesItsKnownAxes) {
  // torch.arange(0.5, 6) as YOLOv8's anchor grid exports it at a fixed batch: Range of constants, added along W.
  onnx::ModelProto model = small_model();
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.mutable_node(1)->set_output(0, "r");
  add_scalar(graph, "start", 0.5f);
  add_scalar(graph, "limit", 6.0f);
  add_scalar(graph, "delta", 1.0f);
  add_node(graph, "Range", {"start", "limit", "delta"}, "cells");
  add_node(graph, "Add", {"r", "cells"}, "y");
  OnnxModel net = load_onnx_from_memory(bytes_of(model), "range.onnx");
  OnnxModel plain = load_onnx_from_memory(bytes_of(small_model()), "small.onnx");
  Variable x(Shape{1, 3, 8, 8});
  for (std::size_t i = 0; i < x.count(); ++i) x.data()[i] = static_cast<float>(i % 5) - 2.0f;
  const Variable expected = plain.forward(x).clone();
  const Variable& y = net.forward(x);
  ASSERT_EQ(y.shape(), expected.shape());
  for (int c = 0; c < 4; ++c) {
    for (int h = 0; h < 6; ++h) {
      for (int w = 0; w < 6; ++w)
        EXPECT_FLOAT_EQ(y.at(0, c, h, w), expected.at(0, c, h, w) + 0.5f + static_cast<float>(w));
    }
  }

  // With a free batch, Shape still gives the known axes: the width (axis 3) as a Range limit loads and runs at
  // any batch. The batch itself (axis 0) used as a number is refused, saying how to export.
  const auto free_batch_model = [&](float axis) {
    onnx::ModelProto free_batch = small_model();
    onnx::GraphProto& free = *free_batch.mutable_graph();
    free.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
    free.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
    free.mutable_node(1)->set_output(0, "r");
    add_scalar(free, "start", 0.5f);
    add_scalar(free, "delta", 1.0f);
    add_scalar(free, "axis", axis, true);
    add_node(free, "Shape", {"r"}, "shape");
    add_node(free, "Gather", {"shape", "axis"}, "extent");
    onnx::NodeProto& cast = add_node(free, "Cast", {"extent"}, "extent_float");
    onnx::AttributeProto& to = *cast.add_attribute();
    to.set_name("to");
    to.set_type(onnx::AttributeProto::INT);
    to.set_i(onnx::TensorProto::FLOAT);
    add_node(free, "Range", {"start", "extent_float", "delta"}, "cells");
    add_node(free, "Add", {"r", "cells"}, "y");
    return free_batch;
  };
  OnnxModel free_net = load_onnx_from_memory(bytes_of(free_batch_model(3.0f)), "free-range.onnx");
  Variable pair(Shape{2, 3, 8, 8});
  for (std::size_t i = 0; i < pair.count(); ++i) pair.data()[i] = x.data()[i % x.count()];
  const Variable& free_y = free_net.forward(pair);
  ASSERT_EQ(free_y.shape(), (Shape{2, 4, 6, 6}));
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 4; ++c) {
      for (int h = 0; h < 6; ++h) {
        for (int w = 0; w < 6; ++w)
          EXPECT_FLOAT_EQ(free_y.at(n, c, h, w), expected.at(0, c, h, w) + 0.5f + static_cast<float>(w));
      }
    }
  }
  const std::string error = load_error(free_batch_model(0.0f));
  EXPECT_TRUE(contains(error, "node 'extent_float' (Cast, opset 13)")) << error;
  EXPECT_TRUE(contains(error, "holds the batch size")) << error;
  EXPECT_TRUE(contains(error, "export with a fixed batch")) << error;
}

TEST(OnnxErrors, DanglingInputsAreNamed) {
  onnx::ModelProto model = small_model();
  model.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  const std::string error = load_error(model);
  EXPECT_TRUE(contains(error, "broken.onnx: node 'relu' (Relu) reads 'nowhere', which no node computes")) << error;
}

TEST(OnnxErrors, DeclaredSizesMustMatchTheData) {
  onnx::ModelProto model = small_model();
  onnx::TensorProto& weights = *model.mutable_graph()->mutable_initializer(0);
  weights.mutable_float_data()->RemoveLast();
  std::string error = load_error(model);
  EXPECT_TRUE(contains(error,
                       "broken.onnx: initializer 'w': declares shape (4, 3, 3, 3) = 108 values, but its data "
                       "holds 107"))
      << error;
  // Raw bytes that are not whole values, and a shape far larger than the file.
  weights.clear_float_data();
  weights.set_raw_data(std::string(431, '\0'));
  error = load_error(model);
  EXPECT_TRUE(contains(error, "431 bytes, not whole values")) << error;
  weights.set_raw_data(std::string(432, '\0'));
  weights.set_dims(0, std::int64_t{1} << 40);
  error = load_error(model);
  EXPECT_TRUE(contains(error, "max_tensor_bytes")) << error;
}

TEST(OnnxErrors, LimitsAndUnreadableFeaturesGiveErrors) {
  EXPECT_TRUE(contains(load_error(small_model(), {.limits = {.max_tensor_bytes = 100}}), "max_tensor_bytes"));
  EXPECT_TRUE(contains(load_error(small_model(), {.limits = {.max_model_bytes = 50}}), "max_model_bytes"));
  onnx::ModelProto external = small_model();
  external.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_TRUE(contains(load_error(external), "external file")) << load_error(external);
  EXPECT_TRUE(contains(load_error(small_model(6)), "opset 6; corgy reads opsets 7 to 18"));
  EXPECT_TRUE(contains(load_error(small_model(19)), "opset 19"));
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(7);
  EXPECT_TRUE(contains(load_error(no_graph), "no graph")) << load_error(no_graph);
}

TEST(OnnxErrors, TheOnnxCheckerRunsOnTheModel) {
  onnx::ModelProto model = small_model();
  model.mutable_graph()->mutable_node(0)->add_attribute()->set_name("no_such_attribute");
  const std::string error = load_error(model);
  EXPECT_TRUE(contains(error, "broken.onnx: the ONNX checker rejects the model")) << error;
}

/// input x (1, 2, 4, 4) -> `op` (x, then `inputs`) -> y, with float initializers `constants` (name, dims, values).
struct ConstantInput {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<float> values;
  bool integer = false;
};

onnx::ModelProto one_node_model(const std::string& op, const std::vector<std::string>& inputs,
                                const std::vector<ConstantInput>& constants) {
  onnx::ModelProto model = small_model();
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.clear_initializer();
  graph.clear_node();
  graph.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(2);
  graph.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(4);
  graph.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(3)->set_dim_value(4);
  for (const ConstantInput& c : constants) {
    onnx::TensorProto& tensor = *graph.add_initializer();
    tensor.set_name(c.name);
    tensor.set_data_type(c.integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (std::int64_t d : c.dims) tensor.add_dims(d);
    for (float v : c.values) {
      if (c.integer) {
        tensor.add_int64_data(static_cast<std::int64_t>(v));
      } else {
        tensor.add_float_data(v);
      }
    }
  }
  onnx::NodeProto& node = *graph.add_node();
  node.set_name("n");
  node.set_op_type(op);
  node.add_input("x");
  for (const std::string& input : inputs) node.add_input(input);
  node.add_output("y");
  return model;
}

void set_attribute(onnx::ModelProto& model, const std::string& name, const std::string& value) {
  onnx::AttributeProto& a = *model.mutable_graph()->mutable_node(0)->add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
}

void set_attribute(onnx::ModelProto& model, const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::AttributeProto& a = *model.mutable_graph()->mutable_node(0)->add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a.add_ints(v);
}

TEST(OnnxErrors, TensorSlicesSplitsAndTransposesKeepTheBatch) {
  const auto slice = [](std::int64_t start, std::int64_t end, std::int64_t axis, std::int64_t step) {
    return load_error(one_node_model("Slice", {"starts", "ends", "axes", "steps"},
                                     {{"starts", {1}, {static_cast<float>(start)}, true},
                                      {"ends", {1}, {static_cast<float>(end)}, true},
                                      {"axes", {1}, {static_cast<float>(axis)}, true},
                                      {"steps", {1}, {static_cast<float>(step)}, true}}));
  };
  EXPECT_EQ(slice(0, 2, 2, 1), "(no error)");   // a TensorSlice
  EXPECT_EQ(slice(1, 0, 1, -1), "(no error)");  // channels backwards
  // The batch's one element, backwards: the whole axis, so the output is the input itself (no layer).
  EXPECT_TRUE(contains(slice(0, -1000, 0, -1), "graph output 'y' is the graph input itself"));
  EXPECT_TRUE(contains(slice(0, 1, 0, -1), "takes no element of axis 0"));
  EXPECT_TRUE(contains(slice(1, 1, 1, 1), "takes no element of axis 1 of (1, 2, 4, 4)"));
  EXPECT_EQ(slice(1, 100, 1, 1), "(no error)");  // ends past the end clamp, as ONNX says

  const auto transpose = [](std::vector<std::int64_t> perm) {
    onnx::ModelProto model = one_node_model("Transpose", {}, {});
    set_attribute(model, "perm", perm);
    return load_error(model);
  };
  EXPECT_EQ(transpose({0, 1, 3, 2}), "(no error)");
  EXPECT_TRUE(contains(transpose({1, 0, 2, 3}), "which moves axis 0; corgy keeps axis 0 as the batch"))
      << transpose({1, 0, 2, 3});
  EXPECT_TRUE(contains(transpose({0, 1, 1, 2}), "perm (0, 1, 1, 2) is not a permutation of the axes of (1, 2, 4, 4)"));

  const auto split = [](std::int64_t axis, std::vector<float> sizes) {
    onnx::ModelProto model =
        one_node_model("Split", {"split"}, {{"split", {static_cast<std::int64_t>(sizes.size())}, sizes, true}});
    onnx::AttributeProto& a = *model.mutable_graph()->mutable_node(0)->add_attribute();
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(axis);
    for (std::size_t k = 1; k < sizes.size(); ++k)
      model.mutable_graph()->mutable_node(0)->add_output(fmt::format("z{}", k));
    return load_error(model);
  };
  EXPECT_EQ(split(2, {1, 3}), "(no error)");
  EXPECT_TRUE(contains(split(0, {1}), "splits axis 0 of (1, 2, 4, 4)"));
  EXPECT_TRUE(contains(split(1, {1, 2}), "split sizes (1, 2) add up to 3, not the 2 channels"));
  EXPECT_TRUE(contains(split(1, {0, 2}), "has a part of 0 channels"));
  EXPECT_EQ(split(1, {1, 1}), "(no error)");

  const auto reshape = [](std::vector<float> shape) {
    return load_error(
        one_node_model("Reshape", {"shape"}, {{"shape", {static_cast<std::int64_t>(shape.size())}, shape, true}}));
  };
  EXPECT_EQ(reshape({1, 8, 4}), "(no error)");
  EXPECT_EQ(reshape({0, 2, 2, 2, -1}), "(no error)");
  EXPECT_TRUE(contains(reshape({2, 16}), "reshapes (1, 2, 4, 4) to (2, 16); corgy keeps axis 0 as the batch"))
      << reshape({2, 16});
  EXPECT_TRUE(contains(reshape({1, 2, 2, 2, 2, 1, 1}), "has a tensor (1, 2, 2, 2, 2, 1, 1) of rank 7"))
      << reshape({1, 2, 2, 2, 2, 1, 1});

  const auto gather = [](std::vector<std::int64_t> dims, std::vector<float> indices, std::int64_t axis) {
    onnx::ModelProto model = one_node_model("Gather", {"i"}, {{"i", dims, indices, true}});
    onnx::AttributeProto& a = *model.mutable_graph()->mutable_node(0)->add_attribute();
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(axis);
    return load_error(model);
  };
  EXPECT_EQ(gather({}, {3}, 2), "(no error)");
  EXPECT_EQ(gather({2}, {3, 1}, -1), "(no error)");
  EXPECT_TRUE(contains(gather({3}, {0, 3, 1}, 2),
                       "gathers indices (0, 3, 1) of axis 2; corgy gathers indices in "
                       "arithmetic progression"))
      << gather({3}, {0, 3, 1}, 2);
  EXPECT_TRUE(contains(gather({}, {0}, 0), "gathers along axis 0 of (1, 2, 4, 4)"));
  EXPECT_TRUE(contains(gather({}, {4}, 3), "index 4 is out of range for axis 3 of (1, 2, 4, 4)"));
  EXPECT_TRUE(contains(gather({2, 1}, {0, 1}, 1), "gathers with indices of shape (2, 1)"));

  const auto expand = [](std::vector<float> shape) {
    return load_error(
        one_node_model("Expand", {"shape"}, {{"shape", {static_cast<std::int64_t>(shape.size())}, shape, true}}));
  };
  EXPECT_TRUE(contains(expand({1, 1, 2, 4, 4}), "adds axes before the batch"));
  EXPECT_TRUE(contains(expand({1, 3, 4, 4}), "cannot broadcast (1, 2, 4, 4) to (1, 3, 4, 4): axis 1 is 2 and 3"));
}

TEST(OnnxErrors, OperatorLimitsNameTheNode) {
  const auto error_with = [](const std::string& attribute, const std::vector<std::int64_t>& values) {
    onnx::ModelProto model = small_model();
    set_attribute(model, attribute, values);
    return load_error(model);
  };
  const std::string zero_stride = error_with("strides", {1, 0});
  EXPECT_TRUE(contains(zero_stride,
                       "broken.onnx: node 'conv' (Conv, opset 13): kernel 3 x 3, strides 1 x 0 and "
                       "dilations 1 x 1 must be positive"))
      << zero_stride;
  const std::string kernel = error_with("kernel_shape", {3, 2});
  EXPECT_TRUE(contains(kernel, "node 'conv' (Conv, opset 13): kernel_shape disagrees with the weights (4, 3, 3, 3)"))
      << kernel;
  const std::string three_d = error_with("dilations", {1, 1, 1});
  EXPECT_TRUE(contains(three_d, "node 'conv' (Conv, opset 13): dilations has 3 values; corgy runs 2-D windows"))
      << three_d;
  const std::string too_small = error_with("dilations", {5, 1});
  EXPECT_TRUE(contains(too_small,
                       "node 'conv' (Conv, opset 13): input (1, 3, 8, 8) with pads (0, 0, 0, 0) is "
                       "smaller than the kernel 3 x 3 (dilated 11 x 3)"))
      << too_small;
}

TEST(OnnxModels, ConvWindowsMayDifferBetweenHeightAndWidth) {
  // Strides (1, 2) on small_model's 3x3 convolution of an 8 x 8 input: (1, 4, 6, 3), one general-window Conv2d.
  onnx::ModelProto model = small_model();
  set_attribute(model, "strides", std::vector<std::int64_t>{1, 2});
  onnx::TensorShapeProto& declared =
      *model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  declared.mutable_dim(3)->set_dim_value(3);
  OnnxModel net = load_onnx_from_memory(bytes_of(model), "strided.onnx");
  ASSERT_EQ(net.model.size(), 1);
  EXPECT_EQ(net.model.layer(0).describe(), "conv2d 3x3/(1, 2) pads (0, 0, 0, 0), 3->4, relu");
  Variable input(net.input_shape(1));
  EXPECT_EQ(net.forward(input).shape(), (Shape{1, 4, 6, 3}));
}

TEST(OnnxErrors, ResizeScalesAndModesAreChecked) {
  auto by_scales = [](std::vector<float> scales) {
    return one_node_model("Resize", {"", "scales"}, {{"scales", {static_cast<std::int64_t>(scales.size())}, scales}});
  };
  onnx::ModelProto good = by_scales({1, 1, 1.5f, 2});
  set_attribute(good, "mode", "linear");
  OnnxModel net = load_onnx_from_memory(bytes_of(good), "good.onnx");
  EXPECT_EQ(net.model.layer(0).describe(), "resize linear half_pixel x1.5 x2");
  EXPECT_EQ(net.input_shape(1), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(net.model.infer_shapes(net.input_shape(1)).back(), (Shape{1, 2, 6, 8}));
  const std::string prefix = "broken.onnx: node 'n' (Resize, opset 13): ";
  std::string error = load_error(by_scales({1, 1, 0, 2}));
  EXPECT_TRUE(contains(error, prefix + "scale 0 of axis 2 must be finite, > 0 and at most 65536")) << error;
  error = load_error(by_scales({1, 1, 2, -1}));
  EXPECT_TRUE(contains(error, "scale -1 of axis 3 must be finite")) << error;
  error = load_error(by_scales({1, 1, 2, 1e30f}));
  EXPECT_TRUE(contains(error, "scale 1e+30 of axis 3 must be finite")) << error;
  error = load_error(by_scales({1, 1, 60000, 2}));
  EXPECT_TRUE(contains(error, "scale 60000 gives axis 2 of input (1, 2, 4, 4) 240000 cells")) << error;
  error = load_error(by_scales({1, 1, 0.1f, 2}));
  EXPECT_TRUE(contains(error, "gives axis 2 of input (1, 2, 4, 4) 0 cells")) << error;
  error = load_error(by_scales({1, 2, 2, 2}));
  EXPECT_TRUE(contains(error, prefix + "scales the batch or channel axis (scales 1, 2, 2, 2)")) << error;
  error = load_error(by_scales({2, 2}));
  EXPECT_TRUE(contains(error, "has 2 scales or sizes for a 4-D input")) << error;
  // Every output within the tensor limit, as for any layer.
  error = load_error(by_scales({1, 1, 1000, 1000}), {.limits = {.max_tensor_bytes = 1 << 20}});
  EXPECT_TRUE(contains(error, "max_tensor_bytes")) << error;
  onnx::ModelProto crop = by_scales({1, 1, 2, 2});
  set_attribute(crop, "coordinate_transformation_mode", "tf_crop_and_resize");
  error = load_error(crop);
  EXPECT_TRUE(contains(error, prefix + "coordinate_transformation_mode tf_crop_and_resize is not supported")) << error;
  onnx::ModelProto area = by_scales({1, 1, 2, 2});
  set_attribute(area, "mode", "area");
  EXPECT_TRUE(contains(load_error(area), "mode area is not supported")) << load_error(area);
  // Scales computed at run time.
  onnx::ModelProto computed = one_node_model("Resize", {"", "r"}, {});
  onnx::NodeProto& relu = *computed.mutable_graph()->add_node();
  relu.set_name("relu");
  relu.set_op_type("Relu");
  relu.add_input("x");
  relu.add_output("r");
  computed.mutable_graph()->mutable_node()->SwapElements(0, 1);
  error = load_error(computed);
  EXPECT_TRUE(contains(error, prefix + "scales (input 2, 'r') must be a constant")) << error;
  // Sizes that change the channels; both scales and sizes.
  auto by_sizes = [](std::vector<float> sizes) {
    return one_node_model("Resize", {"", "", "sizes"}, {{"sizes", {4}, sizes, true}});
  };
  error = load_error(by_sizes({1, 3, 8, 8}));
  EXPECT_TRUE(contains(error, "resizes (1, 2, 4, 4) to sizes (1, 3, 8, 8)")) << error;
  error = load_error(by_sizes({1, 2, 0, 8}));
  EXPECT_TRUE(contains(error, "size 0 of axis 2 must be between 1 and 65536")) << error;
  onnx::ModelProto both = one_node_model("Resize", {"", "scales", "sizes"},
                                         {{"scales", {4}, {1, 1, 2, 2}}, {"sizes", {4}, {1, 2, 8, 8}, true}});
  EXPECT_TRUE(contains(load_error(both), "needs either scales or sizes")) << load_error(both);
}

TEST(OnnxErrors, ArithmeticOfAnyRankNamesTheNodeAndShapes) {
  // The input x is (1, 2, 4, 4).
  std::string error = load_error(one_node_model("Add", {"c"}, {{"c", {3, 1, 1}, {1, 2, 3}}}));
  EXPECT_TRUE(contains(error,
                       "broken.onnx: node 'n' (Add, opset 13): (1, 2, 4, 4) add (3, 1, 1): tensors (1, 2, 4, "
                       "4) and (3, 1, 1) do not broadcast"))
      << error;
  error = load_error(one_node_model("Mul", {"c"}, {{"c", {2, 1, 1, 1}, {1, 2}}}));
  EXPECT_TRUE(contains(error, "node 'n' (Mul, opset 13): (1, 2, 4, 4) multiply (2, 1, 1, 1): ")) << error;
  EXPECT_TRUE(contains(error, "must keep its batch axis first in the result (2, 2, 4, 4)")) << error;
  error = load_error(one_node_model("Pow", {"c"}, {{"c", {1, 1, 1, 1, 1, 1, 2}, {1, 2}}}));
  EXPECT_TRUE(contains(error, "node 'n' (Pow, opset 13): constant operand (1, 1, 1, 1, 1, 1, 2): ")) << error;
  onnx::ModelProto softmax = one_node_model("Softmax", {}, {});
  onnx::AttributeProto& axis = *softmax.mutable_graph()->mutable_node(0)->add_attribute();
  axis.set_name("axis");
  axis.set_type(onnx::AttributeProto::INT);
  axis.set_i(0);
  error = load_error(softmax);
  EXPECT_TRUE(contains(error, "node 'n' (Softmax, opset 13): normalises over axis 0 of (1, 2, 4, 4) (the batch)"))
      << error;
  error = load_error(one_node_model("ReduceSum", {"axes"}, {{"axes", {1}, {0}, true}}));
  EXPECT_TRUE(contains(error, "node 'n' (ReduceSum, opset 13): reduces the batch axis of (1, 2, 4, 4)")) << error;
  // No axes: every axis, which corgy computes for a graph batch of 1 only (per image).
  OnnxModel all_axes = load_onnx_from_memory(bytes_of(one_node_model("ReduceMin", {}, {})), "min.onnx");
  EXPECT_EQ(all_axes.model.layer(0).describe(), "reduce_axis min (1, 2, 4, 4) axes 1..3 -> (1, 1, 1, 1)");
  onnx::ModelProto batch_of_two = one_node_model("ReduceMin", {}, {});
  batch_of_two.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(2);
  error = load_error(batch_of_two);
  EXPECT_TRUE(contains(error, "node 'n' (ReduceMin, opset 13): reduces every axis of (2, 2, 4, 4), the batch too"))
      << error;
  error = load_error(one_node_model("MatMul", {"w"}, {{"w", {5, 3}, std::vector<float>(15, 0.5f)}}));
  EXPECT_TRUE(contains(error,
                       "node 'n' (MatMul, opset 13): weights (5, 3) do not take the 4 features of the "
                       "input (1, 2, 4, 4)"))
      << error;
  OnnxModel erf = load_onnx_from_memory(bytes_of(one_node_model("Erf", {}, {})), "erf.onnx");
  EXPECT_EQ(erf.model.layer(0).describe(), "unary erf");
}

TEST(OnnxErrors, ConvTransposeWeightsAndPadsAreChecked) {
  auto deconv = [](std::vector<std::int64_t> weight_dims) {
    std::int64_t count = 1;
    for (std::int64_t d : weight_dims) count *= d;
    return one_node_model("ConvTranspose", {"w"},
                          {{"w", weight_dims, std::vector<float>(static_cast<std::size_t>(count), 0.5f)}});
  };
  onnx::ModelProto good = deconv({2, 3, 3, 3});
  set_attribute(good, "strides", std::vector<std::int64_t>{2, 2});
  set_attribute(good, "pads", std::vector<std::int64_t>{1, 0, 1, 2});
  OnnxModel net = load_onnx_from_memory(bytes_of(good), "good.onnx");
  EXPECT_EQ(net.model.infer_shapes(net.input_shape(1)).back(), (Shape{1, 3, 7, 7}));
  const std::string prefix = "broken.onnx: node 'n' (ConvTranspose, opset 13): ";
  std::string error = load_error(deconv({3, 3, 3, 3}));
  EXPECT_TRUE(contains(error, prefix + "weights (3, 3, 3, 3) (in, out / group, kH, kW) need 3 input channels, got "
                                       "input (1, 2, 4, 4)"))
      << error;
  error = load_error(deconv({2, 3, 3}));
  EXPECT_TRUE(contains(error, "weights (2, 3, 3) are not a 2-D transposed convolution's")) << error;
  onnx::ModelProto same = deconv({2, 3, 3, 3});
  set_attribute(same, "auto_pad", "SAME_UPPER");
  EXPECT_TRUE(contains(load_error(same), "auto_pad SAME_UPPER is not supported")) << load_error(same);
  onnx::ModelProto odd = deconv({2, 3, 3, 3});
  set_attribute(odd, "output_shape", std::vector<std::int64_t>{5, 6});
  error = load_error(odd);
  EXPECT_TRUE(contains(error, "output_shape 5 x 6 needs a total padding of 1 along axis 2")) << error;
  onnx::ModelProto even = deconv({2, 3, 3, 3});
  set_attribute(even, "output_shape", std::vector<std::int64_t>{4, 6});
  OnnxModel shaped = load_onnx_from_memory(bytes_of(even), "even.onnx");
  EXPECT_EQ(shaped.model.infer_shapes(shaped.input_shape(1)).back(), (Shape{1, 3, 4, 6}));
  onnx::ModelProto cropped = deconv({2, 3, 1, 1});
  set_attribute(cropped, "pads", std::vector<std::int64_t>{2, 0, 2, 0});
  EXPECT_TRUE(contains(load_error(cropped), "crop the whole output")) << load_error(cropped);
  onnx::ModelProto grouped = deconv({2, 3, 3, 3});
  onnx::AttributeProto& group = *grouped.mutable_graph()->mutable_node(0)->add_attribute();
  group.set_name("group");
  group.set_type(onnx::AttributeProto::INT);
  group.set_i(3);
  EXPECT_TRUE(contains(load_error(grouped), "do not divide by group 3")) << load_error(grouped);
}

}  // namespace
}  // namespace corgy::testing
