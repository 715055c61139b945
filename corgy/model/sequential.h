// Sequential: a network as a list of layers, each fed by the previous layer or by earlier layers named by index.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "corgy/backend.h"
#include "corgy/layers/layer.h"
#include "corgy/variable.h"

namespace corgy {

struct MemoryPlan;

/// Builds and runs a network:
///
///   corgy::Sequential model;
///   model.add(corgy::Conv2d({.in_channels = 1, .out_channels = 32, .kernel = 5, .padding = 2,
///                            .activation = corgy::Activation::relu()}));
///   model.add(corgy::MaxPool2d({.kernel = 2}));
///   ...
///   model.set_backend("blas");
///   const corgy::Variable& probabilities = model.forward(images);  // images: (N, 1, 28, 28)
///
/// Shapes are inferred and intermediates allocated once per input shape; later forwards with that shape reuse
/// them. Intermediates whose lifetimes do not overlap share memory. The plans of the last set_kept_plans() input
/// shapes (1 by default) are kept, so a caller that alternates between a few shapes (a server's batch sizes) does
/// not plan again at each change; they share one set of intermediates, as large as the largest needs. Returned
/// references stay valid until the next forward or the next change of the model.
///
/// Threads: one Sequential is used by one thread at a time (it owns its intermediates and its backend); different
/// models may run forward concurrently on any backend. A forward() (or add, mark_output, set_backend, set_fusion,
/// output)
/// called while another thread is inside forward() on the same model throws corgy::Error instead of corrupting
/// memory. See docs/api.md.
class Sequential {
 public:
  /// Index that names the model's input among a layer's inputs.
  static constexpr int model_input = -1;

  /// Starts on the naive backend.
  Sequential();
  ~Sequential();
  Sequential(Sequential&&) noexcept;
  Sequential& operator=(Sequential&&) noexcept;

  /// Appends a layer fed by the layers at `inputs` (indices returned by earlier add() calls, or model_input);
  /// by default by the previous layer (the model input for the first). Returns the new layer's index.
  /// Throws corgy::Error when an index does not name an earlier layer or the count does not fit the layer.
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs = {});
  template <class L>
  requires std::is_base_of_v<Layer, std::remove_cvref_t<L>>
  int add(L&& layer, std::vector<int> inputs = {}) {
    return add(std::make_unique<std::remove_cvref_t<L>>(std::forward<L>(layer)), std::move(inputs));
  }

  /// Keeps a layer's output alive to the end of the forward so output(layer) can read it (YOLOv3's two heads).
  void mark_output(int layer);

  /// Moves the model to a backend. Constant tensors (weights) are handed to it once, at the next forward.
  void set_backend(std::unique_ptr<Backend> backend);
  /// make_backend(name, threads), then set_backend.
  void set_backend(const std::string& name, int threads = 0);
  Backend& backend() { return *backend_; }
  /// Call after changing a layer's weights once the model has run, so the backend gets the new values.
  void weights_changed() {
    weights_uploaded_ = false;
    forget_plans();  // fused layers view the weights and bias storage: rebuild them
  }

  /// How many input shapes keep their plan (their intermediates) at once, the most recently used first; at least
  /// 1. Each kept plan holds its intermediates' memory; a forward at a shape not kept plans again.
  void set_kept_plans(int count);
  int kept_plans() const { return kept_plans_; }

  /// Whether a forward fuses each convolution with the max pool that alone reads its output into one backend
  /// operation (corgy/model/fusion.h), so the convolution's output is never written out. On by default; the
  /// results are the same either way up to rounding.
  void set_fusion(bool enabled);
  bool fusion() const { return fusion_; }

  /// Runs the network on `input` (N, C, H, W) and returns the last layer's output. Throws corgy::Error,
  /// naming the layer, when a shape does not fit.
  const Variable& forward(const Variable& input);
  /// Output of `layer` from the last forward; the last layer's, or one marked with mark_output().
  const Variable& output(int layer) const;

  /// Output shape of every layer for an input shape (checks all shapes; allocates nothing).
  std::vector<Shape> infer_shapes(const Shape& input) const;
  /// Floating-point operations of one forward at an input shape.
  double flops(const Shape& input) const;
  /// One line per layer: index, description, inputs, output shape.
  std::string summary(const Shape& input) const;

  int size() const { return static_cast<int>(nodes_.size()); }
  Layer& layer(int index);
  const Layer& layer(int index) const;
  /// The layer at `index` as type L; throws corgy::Error when it is another type.
  template <class L>
  L& layer_as(int index) {
    if (auto* typed = dynamic_cast<L*>(&layer(index))) return *typed;
    throw_wrong_layer_type(index);
  }
  const std::vector<int>& inputs_of(int index) const;

 private:
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;
    bool keep = false;
  };

  /// One call of a forward: a layer, a fused layer that also computes the layers it replaces, one of the layers a
  /// padded convolution expands into (padded_conv.h), or one of a rewrite's two layers (FusionNode::then).
  struct Step {
    int layer;   // the model's layer this step computes (or helps compute), for errors and profiles
    int output;  // the slot it writes: `layer`, or a temporary's slot (>= size()) that the layer's next step reads
    const Layer* run;         // nodes_[layer].layer, or a layer from planned_layers_
    std::vector<int> inputs;  // the slots `run` reads (model_input for the model's input)
  };

  /// What a forward at one input shape needs: every slot's shape, the intermediates and the views of them.
  struct ShapePlan {
    Shape input;
    std::vector<Shape> shapes;  // per slot: the model's layers (0 .. size() - 1), then the temporaries of steps_
    std::vector<Variable> buffers;
    std::vector<int> buffer_of_slot;         // per slot, its buffer (MemoryPlan::no_buffer: none)
    std::vector<bool> read_on_host;          // per buffer, whether a caller reads it
    std::vector<Variable> outputs;           // per slot, a view of its buffer
    std::vector<std::uint64_t> device_only;  // the buffers no caller reads (Backend::set_device_only)
  };
  /// Makes plans_.front() the plan of `input`: a kept one, or a new one (dropping the least recently used beyond
  /// kept_plans_), and tells the backend its device-only buffers when the plan changed.
  void use_plan(const Shape& input);
  ShapePlan make_plan(const Shape& input) const;
  /// plan.outputs and plan.device_only from its buffers (again after share_kept_buffers replaced some).
  static void bind_buffers(ShapePlan& plan);
  /// Makes `plan` and the kept plans hold one storage per buffer index, the largest of theirs: one forward runs at a
  /// time and its outputs are valid only until the next, so the kept shapes' intermediates need not coexist.
  void share_kept_buffers(ShapePlan& plan);
  /// The steps of a forward with fusion applied (when on) and padded convolutions expanded: fills steps_,
  /// planned_layers_ and temporaries_. They do not depend on the input shape; the plans share them.
  void plan_steps();
  /// Drops the steps and every plan (the layers, the fusion or the backend changed).
  void forget_plans();
  ShapePlan& current() { return plans_.front(); }
  const ShapePlan& current() const { return plans_.front(); }
  [[noreturn]] void throw_wrong_layer_type(int index) const;

  /// Set while a forward runs, so that a second thread using the model at the same time is detected. Moves as
  /// "not in use": moving a model another thread is running is itself a misuse.
  struct InUse {
    mutable std::atomic<bool> flag{false};
    InUse() = default;
    InUse(InUse&&) noexcept {}
    InUse& operator=(InUse&&) noexcept { return *this; }
  };
  /// Holds in_use_ for the length of a forward; throws corgy::Error naming `call` when another thread holds it.
  class ExclusiveUse;
  /// Throws corgy::Error naming `call` when a forward is running on another thread.
  void check_not_in_forward(const char* call) const;

  std::vector<Node> nodes_;
  std::unique_ptr<Backend> backend_;
  bool weights_uploaded_ = false;
  bool fusion_ = true;
  bool steps_planned_ = false;
  std::vector<Step> steps_;
  std::vector<std::unique_ptr<Layer>> planned_layers_;  // fused layers and the expansions of padded convolutions
  int temporaries_ = 0;           // slots size() .. size() + temporaries_ - 1: written and read by steps_ only
  std::vector<ShapePlan> plans_;  // the most recently used first
  int kept_plans_ = 1;
  InUse in_use_;
};

}  // namespace corgy
