#include "corgy/model/memory_plan.h"

#include <algorithm>

namespace corgy {

namespace {

// The layer whose buffer a layer's output lives in: itself, or for a view the owner of what it views
// (-1 when that is the model input).
std::vector<int> find_owners(const std::vector<PlanEntry>& entries) {
  std::vector<int> owner(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int source = entries[i].is_view ? entries[i].inputs.at(0) : static_cast<int>(i);
    owner[i] = (entries[i].is_view && source >= 0) ? owner[source] : source;
    if (entries[i].skipped) owner[i] = -1;
  }
  return owner;
}

// Index of the last layer that needs each owner's buffer.
std::vector<std::size_t> find_last_uses(const std::vector<PlanEntry>& entries, const std::vector<int>& owner) {
  const std::size_t end = entries.size();
  std::vector<std::size_t> last_use(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) last_use[i] = i;
  auto extend = [&](int layer, std::size_t until) {
    if (layer >= 0 && owner[layer] >= 0) last_use[owner[layer]] = std::max(last_use[owner[layer]], until);
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (int input : entries[i].inputs) extend(input, i);
    if (entries[i].keep || i + 1 == entries.size()) extend(static_cast<int>(i), end);
    extend(static_cast<int>(i), i);
  }
  return last_use;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanEntry>& entries) {
  const std::vector<int> owner = find_owners(entries);
  const std::vector<std::size_t> last_use = find_last_uses(entries, owner);

  MemoryPlan plan;
  plan.buffer_of_layer.assign(entries.size(), -1);
  std::vector<int> holder;  // per buffer: the owner layer whose output it holds now, or -1 when free
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].skipped) {
      plan.buffer_of_layer[i] = MemoryPlan::no_buffer;
      continue;
    }
    if (owner[i] != static_cast<int>(i)) {
      plan.buffer_of_layer[i] = owner[i] < 0 ? -1 : plan.buffer_of_layer[owner[i]];
      continue;
    }
    for (int& held : holder) {
      if (held >= 0 && last_use[held] < i) held = -1;
    }
    // Best fit: the smallest free buffer that is large enough, else the largest free one (grown). An output
    // read after the forward gets a buffer no intermediate ever used: a GPU backend keeps intermediates in
    // device memory and copies back only what the caller reads, so a shared, larger buffer would cost a copy
    // (or keep an intermediate in host-visible memory) for nothing.
    const bool read_after_forward = last_use[i] == entries.size();
    int chosen = -1;
    for (std::size_t b = 0; b < holder.size() && !read_after_forward; ++b) {
      if (holder[b] >= 0) continue;
      const bool fits = plan.buffer_sizes[b] >= entries[i].count;
      if (chosen < 0) {
        chosen = static_cast<int>(b);
        continue;
      }
      const bool chosen_fits = plan.buffer_sizes[chosen] >= entries[i].count;
      if ((fits && (!chosen_fits || plan.buffer_sizes[b] < plan.buffer_sizes[chosen])) ||
          (!fits && !chosen_fits && plan.buffer_sizes[b] > plan.buffer_sizes[chosen])) {
        chosen = static_cast<int>(b);
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(holder.size());
      holder.push_back(-1);
      plan.buffer_sizes.push_back(0);
    }
    holder[chosen] = static_cast<int>(i);
    plan.buffer_sizes[chosen] = std::max(plan.buffer_sizes[chosen], entries[i].count);
    plan.buffer_of_layer[i] = chosen;
  }
  return plan;
}

}  // namespace corgy
