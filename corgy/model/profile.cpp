#include "corgy/model/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace corgy {

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

/// Per layer: its flops, and its description.
struct LayerFacts {
  std::vector<double> flops;
  std::vector<std::string> descriptions;
};

LayerFacts layer_facts(const Sequential& model, const Shape& input) {
  const std::vector<Shape> shapes = model.infer_shapes(input);
  LayerFacts facts;
  std::vector<Shape> in;
  for (int i = 0; i < model.size(); ++i) {
    in.clear();
    for (int source : model.inputs_of(i)) in.push_back(source == Sequential::model_input ? input : shapes[source]);
    facts.flops.push_back(model.layer(i).flops(in));
    facts.descriptions.push_back(model.layer(i).describe());
  }
  return facts;
}

}  // namespace

std::vector<LayerProfile> profile_forward(Sequential& model, const Variable& input, int repeat) {
  Backend& backend = model.backend();
  backend.set_profiling(true);
  std::map<int, std::vector<double>> times;  // per layer, the ms of each forward (entries of a layer summed)
  std::map<int, std::string> algorithms;
  try {
    for (int r = 0; r < repeat; ++r) {
      model.forward(input);
      std::map<int, double> this_forward;
      for (const OpProfile& entry : backend.take_profile()) {
        this_forward[entry.layer] += entry.ms;
        std::string& algorithm = algorithms[entry.layer];
        if (r == 0) algorithm += (algorithm.empty() ? "" : " + ") + entry.algorithm;
      }
      for (const auto& [layer, ms] : this_forward) times[layer].push_back(ms);
    }
  } catch (...) {
    backend.set_profiling(false);
    throw;
  }
  backend.set_profiling(false);

  // A step that computes several layers (a fused convolution + pool) is profiled under the last of them; the layers
  // before it without an entry of their own (the convolution, views) are counted in it.
  const LayerFacts facts = layer_facts(model, input.shape());
  std::vector<LayerProfile> rows;
  double pending_flops = 0.0;
  std::string pending_description;
  for (int i = 0; i < model.size(); ++i) {
    pending_flops += facts.flops[i];
    pending_description += (pending_description.empty() ? "" : " + ") + facts.descriptions[i];
    const auto found = times.find(i);
    if (found == times.end()) {
      if (model.layer(i).is_view()) pending_description.clear();  // a view computes nothing: say nothing of it
      continue;
    }
    rows.push_back({i, pending_description, algorithms[i], median(found->second), pending_flops});
    pending_flops = 0.0;
    pending_description.clear();
  }
  return rows;
}

std::string format_profile(const std::vector<LayerProfile>& rows, double peak_gflops, std::string_view peak_label) {
  double total_ms = 0.0;
  double total_flops = 0.0;
  for (const LayerProfile& row : rows) {
    total_ms += row.median_ms;
    total_flops += row.flops;
  }
  auto rate = [](double flops, double ms) { return ms > 0.0 ? flops / ms / 1e6 : 0.0; };
  auto share_of_peak = [&](double gflops) { return peak_gflops > 0.0 ? 100.0 * gflops / peak_gflops : 0.0; };
  std::string text = fmt::format("per-layer profile (medians); peak: {}\n", peak_label);
  text += fmt::format("{:>5} {:>9} {:>6} {:>9} {:>7}  {:<44} {}\n", "layer", "ms", "%time", "GFLOP/s", "%peak",
                      "algorithm", "layer");
  for (const LayerProfile& row : rows) {
    const double gflops = rate(row.flops, row.median_ms);
    text += fmt::format("{:>5} {:>9.3f} {:>5.1f}% {:>9.1f} {:>6.1f}%  {:<44} {}\n", row.layer, row.median_ms,
                        total_ms > 0.0 ? 100.0 * row.median_ms / total_ms : 0.0, gflops, share_of_peak(gflops),
                        row.algorithm, row.description);
  }
  const double total_gflops = rate(total_flops, total_ms);
  text += fmt::format("{:>5} {:>9.3f} {:>5.1f}% {:>9.1f} {:>6.1f}%  (sum of the layers' medians)\n", "total", total_ms,
                      100.0, total_gflops, share_of_peak(total_gflops));
  return text;
}

}  // namespace corgy
