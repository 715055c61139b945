#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace corgy::serve {

namespace {

// Microseconds: 100 us to 10 s.
std::vector<double> time_bounds() {
  return {100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 10'000'000};
}

std::vector<double> batch_bounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}; }

/// Escapes a label value as the text format wants it.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<std::size_t>(bucket)];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& labels) const {
  std::string out;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
  return out;
}

ModelMetrics::ModelMetrics()
    : values_{.queue_us = Histogram(time_bounds()),
              .compute_us = Histogram(time_bounds()),
              .batch_size = Histogram(batch_bounds())} {}

void ModelMetrics::request_succeeded() {
  std::lock_guard lock(mutex_);
  ++values_.success;
}

void ModelMetrics::request_failed() {
  std::lock_guard lock(mutex_);
  ++values_.failure;
}

void ModelMetrics::observe_queue_us(double us) {
  std::lock_guard lock(mutex_);
  values_.queue_us.observe(us);
}

void ModelMetrics::observe_batch(double compute_us, int items) {
  std::lock_guard lock(mutex_);
  values_.compute_us.observe(compute_us);
  values_.batch_size.observe(items);
  ++values_.batches;
  values_.items += static_cast<std::uint64_t>(items);
}

ModelMetrics::Snapshot ModelMetrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return values_;
}

ModelMetrics& Metrics::model(const std::string& name, const std::string& version) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<ModelMetrics>& slot = models_[{name, version}];
  if (!slot) slot = std::make_unique<ModelMetrics>();
  return *slot;
}

std::string Metrics::render() const {
  std::vector<std::pair<std::string, ModelMetrics::Snapshot>> snapshots;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, metrics] : models_) {
      snapshots.emplace_back(
          fmt::format("model=\"{}\",version=\"{}\"", label_value(key.first), label_value(key.second)),
          metrics->snapshot());
    }
  }
  using Snapshot = ModelMetrics::Snapshot;
  std::string out;
  const auto counter = [&](const char* name, const char* help, std::uint64_t Snapshot::*field) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
    for (const auto& [labels, s] : snapshots) out += fmt::format("{}{{{}}} {}\n", name, labels, s.*field);
  };
  const auto histogram = [&](const char* name, const char* help, Histogram Snapshot::*field) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    for (const auto& [labels, s] : snapshots) out += (s.*field).render(name, labels);
  };
  counter("corgy_inference_request_success_total", "Inference requests that succeeded", &Snapshot::success);
  counter("corgy_inference_request_failure_total", "Inference requests that failed (refused or errored)",
          &Snapshot::failure);
  counter("corgy_inference_exec_total", "Forwards run (batches)", &Snapshot::batches);
  counter("corgy_inference_items_total", "Items (summed batch dimension of the requests) run", &Snapshot::items);
  histogram("corgy_inference_queue_duration_us", "Time from a request's arrival to the start of its batch, us",
            &Snapshot::queue_us);
  histogram("corgy_inference_compute_duration_us", "Duration of a batch's forward, us", &Snapshot::compute_us);
  histogram("corgy_inference_batch_size", "Items a forward ran (padding excluded)", &Snapshot::batch_size);
  return out;
}

}  // namespace corgy::serve
