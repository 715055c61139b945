#include "corgy/model/sequential.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>

#include "corgy/backends/naive/naive_backend.h"
#include "corgy/error.h"
#include "corgy/model/fusion.h"
#include "corgy/model/memory_plan.h"
#include "corgy/model/padded_conv.h"

namespace corgy {

namespace {

std::string layer_name(int index, const Layer& layer) { return fmt::format("layer {} ({})", index, layer.describe()); }

// Adds "layer i (...)" to the message of an error raised inside a layer.
template <class F>
auto with_layer_context(int index, const Layer& layer, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", layer_name(index, layer), e.what()));
  }
}

}  // namespace

class Sequential::ExclusiveUse {
 public:
  ExclusiveUse(const InUse& in_use, const char* call) : in_use_(in_use) {
    if (in_use_.flag.exchange(true, std::memory_order_acquire)) throw_in_use(call);
  }
  ~ExclusiveUse() { in_use_.flag.store(false, std::memory_order_release); }
  ExclusiveUse(const ExclusiveUse&) = delete;
  ExclusiveUse& operator=(const ExclusiveUse&) = delete;

  [[noreturn]] static void throw_in_use(const char* call) {
    throw Error(
        fmt::format("Sequential::{}: another thread is running forward on this model; a Sequential is used "
                    "by one thread at a time (give each thread a model of its own)",
                    call));
  }

 private:
  const InUse& in_use_;
};

void Sequential::check_not_in_forward(const char* call) const {
  if (in_use_.flag.load(std::memory_order_acquire)) ExclusiveUse::throw_in_use(call);
}

Sequential::Sequential() : backend_(std::make_unique<NaiveBackend>()) {}
Sequential::~Sequential() = default;
Sequential::Sequential(Sequential&&) noexcept = default;
Sequential& Sequential::operator=(Sequential&&) noexcept = default;

int Sequential::add(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  check_not_in_forward("add");
  const int index = size();
  if (inputs.empty()) inputs.push_back(index - 1);
  for (int input : inputs) {
    if (input < model_input || input >= index) {
      throw Error(fmt::format("layer {} ({}): input {} does not name an earlier layer (0..{}) or the model input",
                              index, layer->describe(), input, index - 1));
    }
  }
  const int arity = layer->arity();
  if ((arity == Layer::any_arity && inputs.empty()) ||
      (arity != Layer::any_arity && static_cast<int>(inputs.size()) != arity)) {
    throw Error(fmt::format("layer {} ({}): takes {} input(s), got {}", index, layer->describe(),
                            arity == Layer::any_arity ? "one or more" : std::to_string(arity), inputs.size()));
  }
  nodes_.push_back({std::move(layer), std::move(inputs)});
  forget_plans();
  weights_uploaded_ = false;
  return index;
}

void Sequential::mark_output(int layer) {
  check_not_in_forward("mark_output");
  this->layer(layer);
  nodes_[layer].keep = true;
  forget_plans();
}

void Sequential::set_backend(std::unique_ptr<Backend> backend) {
  if (!backend) throw Error("Sequential::set_backend: null backend");
  check_not_in_forward("set_backend");
  forget_plans();  // before the old backend goes: the plans' buffers may be registered with it
  backend_ = std::move(backend);
  backend_->set_kept_plans(kept_plans_);
  weights_uploaded_ = false;
}

void Sequential::set_backend(const std::string& name, int threads) { set_backend(make_backend(name, threads)); }

void Sequential::set_fusion(bool enabled) {
  check_not_in_forward("set_fusion");
  fusion_ = enabled;
  forget_plans();
}

void Sequential::set_kept_plans(int count) {
  check_not_in_forward("set_kept_plans");
  if (count < 1) throw Error(fmt::format("Sequential::set_kept_plans: {} plans; keep at least 1", count));
  kept_plans_ = count;
  if (plans_.size() > static_cast<std::size_t>(count)) plans_.resize(static_cast<std::size_t>(count));
  backend_->set_kept_plans(count);
}

void Sequential::forget_plans() {
  plans_.clear();
  steps_.clear();
  temporaries_ = 0;
  planned_layers_.clear();
  steps_planned_ = false;
}

Layer& Sequential::layer(int index) {
  if (index < 0 || index >= size()) throw Error(fmt::format("no layer {} in a model of {} layers", index, size()));
  return *nodes_[index].layer;
}

const Layer& Sequential::layer(int index) const { return const_cast<Sequential*>(this)->layer(index); }

const std::vector<int>& Sequential::inputs_of(int index) const {
  layer(index);
  return nodes_[index].inputs;
}

void Sequential::throw_wrong_layer_type(int index) const {
  throw Error(fmt::format("{} is not of the requested type", layer_name(index, layer(index))));
}

std::vector<Shape> Sequential::infer_shapes(const Shape& input) const {
  if (input.has_zero_or_negative()) throw Error(fmt::format("model input {} has a zero dimension", input.str()));
  if (nodes_.empty()) throw Error("the model has no layers");
  std::vector<Shape> shapes;
  shapes.reserve(nodes_.size());
  std::vector<Shape> in;
  for (int i = 0; i < size(); ++i) {
    in.clear();
    for (int source : nodes_[i].inputs) in.push_back(source == model_input ? input : shapes[source]);
    shapes.push_back(with_layer_context(i, *nodes_[i].layer, [&] { return nodes_[i].layer->output_shape(in); }));
  }
  return shapes;
}

double Sequential::flops(const Shape& input) const {
  const std::vector<Shape> shapes = infer_shapes(input);
  double total = 0.0;
  std::vector<Shape> in;
  for (int i = 0; i < size(); ++i) {
    in.clear();
    for (int source : nodes_[i].inputs) in.push_back(source == model_input ? input : shapes[source]);
    total += nodes_[i].layer->flops(in);
  }
  return total;
}

std::string Sequential::summary(const Shape& input) const {
  const std::vector<Shape> shapes = infer_shapes(input);
  std::string text = fmt::format("input {}\n", input.str());
  for (int i = 0; i < size(); ++i) {
    std::string sources;
    for (int source : nodes_[i].inputs) {
      sources +=
          (sources.empty() ? "" : ", ") + (source == model_input ? std::string("input") : std::to_string(source));
    }
    text += fmt::format("{:3} {:<48} <- {:<10} -> {}\n", i, nodes_[i].layer->describe(), sources, shapes[i].str());
  }
  return text;
}

void Sequential::plan_steps() {
  steps_.clear();
  planned_layers_.clear();
  temporaries_ = 0;
  FusedGraph graph;
  for (int i = 0; i < size(); ++i) {
    graph.nodes.push_back({nodes_[i].layer.get(), nodes_[i].inputs, nodes_[i].keep || i + 1 == size()});
  }
  if (fusion_) graph = fuse_layers(std::move(graph.nodes));
  for (int i = 0; i < size(); ++i) {
    const FusionNode& node = graph.nodes[i];
    if (node.absorbed) continue;
    // A node of two layers (FusionNode::then): the first writes a temporary slot of its own, which the second reads.
    const int output = node.then ? size() + temporaries_++ : i;
    if (std::optional<PaddedConvExpansion> padded = expand_padded_conv(*node.layer)) {
      // Pad into a temporary slot of its own, then the convolution without padding reads that slot.
      const int temporary = size() + temporaries_++;
      steps_.push_back({i, temporary, padded->pad.get(), node.inputs});
      steps_.push_back({i, output, padded->conv.get(), {temporary}});
      planned_layers_.push_back(std::move(padded->pad));
      planned_layers_.push_back(std::move(padded->conv));
    } else {
      steps_.push_back({i, output, node.layer, node.inputs});
    }
    if (node.then) steps_.push_back({i, i, node.then, {output}});
  }
  for (std::unique_ptr<Layer>& fused : graph.fused_layers) planned_layers_.push_back(std::move(fused));
  steps_planned_ = true;
}

Sequential::ShapePlan Sequential::make_plan(const Shape& input) const {
  ShapePlan plan;
  plan.input = input;
  plan.shapes = infer_shapes(input);
  plan.shapes.resize(plan.shapes.size() + static_cast<std::size_t>(temporaries_));
  // A rewritten step may lay its output out otherwise than the layer it stands for (fusion rule 11 runs a
  // channels-last chain of layers on the channels-first tensor; rule 12 convolves before it pools): each step's
  // shape (a temporary's too) is its own layer's, from the shapes of its inputs as the steps before it made them.
  std::vector<Shape> in;
  for (const Step& step : steps_) {
    in.clear();
    for (int source : step.inputs) in.push_back(source == model_input ? input : plan.shapes[source]);
    plan.shapes[step.output] = with_layer_context(step.layer, *step.run, [&] { return step.run->output_shape(in); });
  }
  // The memory plan sees the steps' outputs in the order they run; a layer computed inside a fused step has none.
  std::vector<int> entry_of_slot(plan.shapes.size(), -1);
  std::vector<PlanEntry> entries;
  for (const Step& step : steps_) {
    PlanEntry entry{
        plan.shapes[step.output].count(), {}, step.run->is_view(), step.output < size() && nodes_[step.output].keep};
    for (int source : step.inputs) entry.inputs.push_back(source == model_input ? model_input : entry_of_slot[source]);
    entry_of_slot[step.output] = static_cast<int>(entries.size());
    entries.push_back(std::move(entry));
  }
  const MemoryPlan memory = plan_memory(entries);
  std::vector<int> buffer_of_slot(plan.shapes.size(), MemoryPlan::no_buffer);
  for (std::size_t slot = 0; slot < plan.shapes.size(); ++slot) {
    if (entry_of_slot[slot] >= 0) buffer_of_slot[slot] = memory.buffer_of_layer[entry_of_slot[slot]];
  }
  for (std::size_t count : memory.buffer_sizes) plan.buffers.emplace_back(Shape::vector(static_cast<int>(count)));
  // The last layer's output and the kept ones are read on the host; a GPU backend may keep the rest on the device.
  plan.read_on_host.assign(plan.buffers.size(), false);
  for (int i = 0; i < size(); ++i) {
    const int buffer = buffer_of_slot[i];
    if (buffer >= 0 && (nodes_[i].keep || i + 1 == size())) plan.read_on_host[buffer] = true;
  }
  plan.buffer_of_slot = std::move(buffer_of_slot);
  bind_buffers(plan);
  return plan;
}

void Sequential::bind_buffers(ShapePlan& plan) {
  plan.outputs.clear();
  for (std::size_t slot = 0; slot < plan.shapes.size(); ++slot) {
    const int buffer = plan.buffer_of_slot[slot];
    // Views of the model input are rebound at every forward, since the input is the caller's; layers computed
    // inside a fused step have no output of their own.
    plan.outputs.push_back(buffer < 0 ? Variable() : plan.buffers[buffer].view(plan.shapes[slot]));
  }
  plan.device_only.clear();
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    if (!plan.read_on_host[b]) plan.device_only.push_back(plan.buffers[b].storage()->id());
  }
}

void Sequential::share_kept_buffers(ShapePlan& plan) {
  // Buffer b of every plan becomes one storage: the kept plans already share theirs, so the first of them that is
  // larger gives its storage to the new plan, and a new plan larger than each gives its own to each. Within a plan
  // its buffers stay distinct storages, as the memory plan made them (storage b only ever replaces another b).
  // ResNet-50 served at batch sizes 1, 2, 4 and 8 (corgy-serve's allowed_batch_sizes) held the intermediates of
  // all four at once.
  for (ShapePlan& kept : plans_) {
    bool kept_changed = false, plan_changed = false;
    for (std::size_t b = 0; b < std::min(kept.buffers.size(), plan.buffers.size()); ++b) {
      if (kept.buffers[b].storage() == plan.buffers[b].storage()) continue;
      if (kept.buffers[b].capacity() >= plan.buffers[b].capacity()) {
        plan.buffers[b] = kept.buffers[b].share();
        plan_changed = true;
      } else {
        kept.buffers[b] = plan.buffers[b].share();
        kept_changed = true;
      }
    }
    if (kept_changed) bind_buffers(kept);
    if (plan_changed) bind_buffers(plan);
  }
}

void Sequential::use_plan(const Shape& input) {
  if (!plans_.empty() && plans_.front().input == input) return;
  const auto kept = std::find_if(plans_.begin(), plans_.end(), [&](const ShapePlan& p) { return p.input == input; });
  if (kept != plans_.end()) {
    std::rotate(plans_.begin(), kept, kept + 1);
  } else {
    if (!steps_planned_) plan_steps();
    // Made before anything is dropped: a shape that does not fit the model leaves the kept plans as they were.
    ShapePlan plan = make_plan(input);
    if (plans_.size() >= static_cast<std::size_t>(kept_plans_))
      plans_.resize(static_cast<std::size_t>(kept_plans_) - 1);
    share_kept_buffers(plan);
    plans_.insert(plans_.begin(), std::move(plan));
  }
  backend_->set_device_only(current().device_only);
}

const Variable& Sequential::forward(const Variable& input) {
  const ExclusiveUse use(in_use_, "forward");
  if (input.empty()) throw Error("forward: the input Variable is empty");
  use_plan(input.shape());
  std::vector<Variable>& outputs = current().outputs;
  const std::vector<Shape>& shapes = current().shapes;
  if (!weights_uploaded_) {
    for (const Node& node : nodes_) node.layer->upload(*backend_);
    weights_uploaded_ = true;
  }
  std::vector<const Variable*> in;
  backend_->begin_forward();
  try {
    for (const Step& step : steps_) {
      in.clear();
      for (int source : step.inputs) in.push_back(source == model_input ? &input : &outputs[source]);
      if (step.run->is_view()) {
        outputs[step.output] = in[0]->view(shapes[step.output]);
        continue;
      }
      backend_->begin_layer(step.layer);
      with_layer_context(step.layer, *step.run, [&] { step.run->forward(*backend_, in, outputs[step.output]); });
    }
    backend_->begin_layer(-1);
  } catch (...) {
    backend_->end_forward();
    throw;
  }
  backend_->end_forward();
  return outputs[size() - 1];
}

const Variable& Sequential::output(int layer) const {
  check_not_in_forward("output");
  this->layer(layer);
  if (!nodes_[layer].keep && layer + 1 != size()) {
    throw Error(fmt::format("{}: its output is not kept; call mark_output({}) before forward",
                            layer_name(layer, this->layer(layer)), layer));
  }
  if (plans_.empty() || current().outputs[layer].empty()) throw Error("output(): no forward has run yet");
  return current().outputs[layer];
}

}  // namespace corgy
