#include "serve/dynamic_batcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "corgy/error.h"
#include "serve/inference_protocol.h"
#include "serve/parallel_copy.h"

namespace corgy::serve {

namespace {

bool same_item_shape(const Shape& a, const Shape& b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

double microseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

DynamicBatcher::DynamicBatcher(std::vector<std::unique_ptr<ModelInstance>> instances, const ModelConfig& config,
                               ModelMetrics& metrics)
    : instances_(std::move(instances)), config_(config), metrics_(metrics) {
  for (std::unique_ptr<ModelInstance>& instance : instances_) {
    workers_.emplace_back([this, &instance] { work(*instance); });
  }
}

DynamicBatcher::~DynamicBatcher() {
  stop();
  for (std::thread& worker : workers_) worker.join();
}

void DynamicBatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_all();
}

std::future<BatchResult> DynamicBatcher::submit(Variable input) {
  const int items = input.shape().n;
  Job job{std::move(input), std::chrono::steady_clock::now(), {}};
  std::future<BatchResult> result = job.promise.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw RequestError(503, "the server is shutting down");
    if (queued_items_ + items > config_.max_queue_size) {
      throw RequestError(503, fmt::format("the queue is full: {} items wait, max_queue_size is {}", queued_items_,
                                          config_.max_queue_size));
    }
    queue_.push_back(std::move(job));
    queued_items_ += items;
  }
  arrived_.notify_all();
  return result;
}

void DynamicBatcher::work(ModelInstance& instance) {
  BatchTensor batch;  // this worker's, kept from batch to batch (forward says why)
  for (;;) {
    std::vector<Job> jobs = next_batch();
    if (jobs.empty()) return;
    run_batch(instance, jobs, batch);
  }
}

std::vector<DynamicBatcher::Job> DynamicBatcher::next_batch() {
  std::unique_lock lock(mutex_);
  // One worker collects at a time, so that an idle one does not split the batch being formed.
  arrived_.wait(lock, [&] { return (!queue_.empty() && !collecting_) || (stopping_ && queue_.empty()); });
  if (queue_.empty()) return {};
  collecting_ = true;
  const Shape shape = queue_.front().input.shape();
  const auto deadline = queue_.front().arrival + std::chrono::microseconds(config_.max_queue_delay_us);
  std::vector<Job> batch;
  int items = 0;
  const auto take = [&] {
    for (auto it = queue_.begin(); it != queue_.end() && items < config_.max_batch_size;) {
      const int n = it->input.shape().n;
      if (same_item_shape(it->input.shape(), shape) && items + n <= config_.max_batch_size) {
        items += n;
        queued_items_ -= n;
        batch.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  };
  take();
  // Bounded by the deadline: each wake-up takes what arrived, and the wait ends at the deadline at the latest.
  while (items < config_.max_batch_size && !stopping_) {
    // A wait on a deadline already past is still a system call (about 20 us on these VMs, a fifth of an MNIST
    // forward on the GPU): with no delay left, the batch goes as it is.
    if (std::chrono::steady_clock::now() >= deadline) break;
    const bool timed_out = arrived_.wait_until(lock, deadline) == std::cv_status::timeout;
    take();
    if (timed_out) break;
  }
  collecting_ = false;
  lock.unlock();
  arrived_.notify_all();  // another worker may collect what is left
  return batch;
}

void DynamicBatcher::run_batch(ModelInstance& instance, std::vector<Job>& jobs, BatchTensor& batch) {
  try {
    forward(instance, jobs, batch);
    return;
  } catch (const std::exception& e) {
    if (jobs.size() == 1) {
      jobs[0].promise.set_value({{}, e.what()});
      return;
    }
  }
  // One request can fail a batch (an input size the network cannot take): each runs alone, so that only it fails.
  for (Job& job : jobs) {
    std::vector<Job> one;
    one.push_back(std::move(job));
    try {
      forward(instance, one, batch);
    } catch (const std::exception& e) {
      one[0].promise.set_value({{}, e.what()});
    }
  }
}

void DynamicBatcher::forward(ModelInstance& instance, std::vector<Job>& jobs, BatchTensor& batch) {
  int items = 0;
  for (const Job& job : jobs) items += job.input.shape().n;
  Shape shape = jobs[0].input.shape();
  shape.n = config_.padded_batch_size(items);
  // The requests are copied into one tensor that the worker keeps, sized for max_batch_size items, each batch a view
  // of its first items: the Vulkan backend imports (pins) and mirrors in device memory each host storage it has not
  // seen, which for a new 64 MB batch every forward cost more than the forward itself (Tiny YOLO padded to 32 on an
  // H100 served 325 requests/s batched against 735 one at a time). A view keeps the storage, so every batch size
  // reuses the one import.
  Shape largest = shape;
  largest.n = std::max(config_.max_batch_size, shape.n);
  if (batch.storage.empty() || batch.storage.shape() != largest) batch = {Variable(largest), 0};
  Variable batch_input = batch.storage.view(shape);
  std::vector<CopySegment> copies;
  float* out = batch_input.data();
  for (const Job& job : jobs) {
    copies.push_back({job.input.data(), out, job.input.count() * sizeof(float)});
    out += job.input.count();
  }
  copy_in_parallel(copies);
  // The padding is zeros, not an earlier batch's items: only what an earlier batch left there is cleared.
  const std::size_t item = batch_input.count() / static_cast<std::size_t>(shape.n);
  const int cleared_until = std::min(batch.written_items, shape.n);
  if (cleared_until > items) {
    std::fill(batch_input.data() + item * items, batch_input.data() + item * cleared_until, 0.0f);
  }
  batch.written_items = batch.written_items > shape.n ? batch.written_items : items;
  const Variable& input = batch_input;
  const auto start = std::chrono::steady_clock::now();
  for (const Job& job : jobs) metrics_.observe_queue_us(microseconds(start - job.arrival));
  const std::vector<const Variable*> outputs = instance.forward(input);
  metrics_.observe_batch(microseconds(std::chrono::steady_clock::now() - start), items);

  std::vector<BatchResult> results(jobs.size());
  for (const Variable* output : outputs) {
    Shape part = output->shape();
    if (part.n != shape.n) {
      throw Error(fmt::format("an output has the shape {} for an input batch of {}", part.str(), shape.n));
    }
    const std::size_t per_item = output->count() / static_cast<std::size_t>(part.n);
    const float* in = output->data();
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      part.n = jobs[j].input.shape().n;
      Variable slice(part);
      std::memcpy(slice.data(), in, per_item * static_cast<std::size_t>(part.n) * sizeof(float));
      in += per_item * static_cast<std::size_t>(part.n);
      results[j].outputs.push_back(std::move(slice));
    }
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) jobs[j].promise.set_value(std::move(results[j]));
}

}  // namespace corgy::serve
