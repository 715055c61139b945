// Memory planning for Sequential: intermediates whose lifetimes do not overlap share one buffer
// (the idea of MPSTemporaryImage), so a deep network needs a few buffers, not one per layer.
#pragma once

#include <cstddef>
#include <vector>

namespace corgy {

/// What the planner needs to know about one layer's output.
struct PlanEntry {
  std::size_t count = 0;    // floats in the output
  std::vector<int> inputs;  // producer layers; -1 is the model input
  bool is_view = false;     // the output is its first input seen with another shape
  bool keep = false;        // must survive to the end of the forward (a model output)
  bool skipped = false;     // computed inside another layer's operation (a fused convolution): needs no buffer
};

struct MemoryPlan {
  static constexpr int model_input_view = -1;
  static constexpr int no_buffer = -2;
  /// Buffer index of each layer's output; model_input_view for a view of the model input, no_buffer for a
  /// skipped layer.
  std::vector<int> buffer_of_layer;
  /// Floats each buffer must hold.
  std::vector<std::size_t> buffer_sizes;
};

/// Assigns each output a buffer no other live output uses: an output is live from its layer to its last
/// reader (or the end, when kept); a view extends the life of the buffer it views. Layer i never writes the
/// buffer of one of its own inputs. An output that lives to the end (kept, or the last layer's) has a buffer of
/// its own that no other output uses.
MemoryPlan plan_memory(const std::vector<PlanEntry>& entries);

}  // namespace corgy
