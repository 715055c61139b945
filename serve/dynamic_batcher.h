// Dynamic batching of one model version: requests wait in one queue; a worker per instance takes up to
// max_batch_size items (the N of each request), waiting at most max_queue_delay_us after the first for more,
// concatenates them along N into one input padded to an allowed batch size, runs one forward, and splits the
// outputs back to their requests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "corgy/variable.h"
#include "serve/metrics.h"
#include "serve/model_repository.h"

namespace corgy::serve {

/// What a request gets back: every output of the model for its items, in corgy's 4-D layout, or an error.
struct BatchResult {
  std::vector<Variable> outputs;
  std::string error;  ///< empty on success
};

class DynamicBatcher {
 public:
  /// Starts one worker thread per instance.
  DynamicBatcher(std::vector<std::unique_ptr<ModelInstance>> instances, const ModelConfig& config,
                 ModelMetrics& metrics);
  /// stop(), then joins the workers.
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  /// Queues `input` (N, C, H, W), N <= max_batch_size, already checked against the model's signature. Throws
  /// RequestError(503) when the queue holds max_queue_size items already (counting this request's N), and
  /// RequestError(503) after stop().
  std::future<BatchResult> submit(Variable input);

  /// Refuses new requests; the workers finish every queued one, then end.
  void stop();

 private:
  struct Job {
    Variable input;
    std::chrono::steady_clock::time_point arrival;
    std::promise<BatchResult> promise;
  };

  /// A worker's batch tensor: max_batch_size items, of which each batch uses the first (a view).
  struct BatchTensor {
    Variable storage;
    int written_items = 0;  // items from the start that may hold an earlier batch's values (the rest are zeros)
  };

  void work(ModelInstance& instance);
  /// Takes the next batch from the queue: the oldest job, then (until max_queue_delay_us after the oldest's arrival
  /// or the batch is full) every job of the same item shape that fits. Empty when stopping with an empty queue.
  std::vector<Job> next_batch();
  void run_batch(ModelInstance& instance, std::vector<Job>& jobs, BatchTensor& batch);
  /// Runs the jobs as one forward, padded to the allowed batch size, in a view of `batch` (the worker's tensor of
  /// max_batch_size items, reallocated only when the item shape changes), and fulfils their promises;
  /// throws what the forward throws.
  void forward(ModelInstance& instance, std::vector<Job>& jobs, BatchTensor& batch);

  std::vector<std::unique_ptr<ModelInstance>> instances_;
  const ModelConfig config_;
  ModelMetrics& metrics_;

  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Job> queue_;
  int queued_items_ = 0;
  bool stopping_ = false;
  bool collecting_ = false;  // a worker is forming a batch
  std::vector<std::thread> workers_;
};

}  // namespace corgy::serve
