// The server's metrics in the Prometheus text format (GET /metrics): per model version, requests that succeeded and
// failed, and histograms of the time requests waited in the queue, the time their batch computed, and batch sizes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace corgy::serve {

/// A Prometheus histogram: cumulative counts at fixed upper bounds, plus the sum and count of observations.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// The exposition lines of `name` with `labels` (without braces, e.g. model="mnist",version="1").
  std::string render(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

/// The metrics of one model version. Thread-safe.
class ModelMetrics {
 public:
  ModelMetrics();
  void request_succeeded();
  void request_failed();
  /// One request's wait from its arrival to the start of its batch's forward, in microseconds.
  void observe_queue_us(double us);
  /// One forward: its duration and the items (the summed N of its requests, padding excluded) it ran.
  void observe_batch(double compute_us, int items);

  /// The values at one moment, copied under the lock.
  struct Snapshot {
    std::uint64_t success = 0;
    std::uint64_t failure = 0;
    std::uint64_t batches = 0;
    std::uint64_t items = 0;
    Histogram queue_us;
    Histogram compute_us;
    Histogram batch_size;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  Snapshot values_;
};

/// Every model version's metrics, rendered together with HELP and TYPE lines.
class Metrics {
 public:
  /// The metrics of a model version, created at the first call. The reference stays valid while this lives.
  ModelMetrics& model(const std::string& name, const std::string& version);
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace corgy::serve
