#include "corgy/backends/blas/thread_team.h"

#include <algorithm>

namespace corgy::blas {

TeamMember::Range TeamMember::share(std::size_t total, std::size_t granule) const {
  const std::size_t granules = (total + granule - 1) / granule;
  const std::size_t per_member = (granules + count_ - 1) / count_ * granule;
  const std::size_t begin = std::min(total, per_member * index_);
  return {begin, std::min(total, begin + per_member)};
}

ThreadTeam::ThreadTeam(int size) {
  for (int index = 1; index < size; ++index) workers_.emplace_back([this, index] { work(index); });
}

ThreadTeam::~ThreadTeam() {
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadTeam::run(int count, const std::function<void(const TeamMember&)>& task) {
  count = std::clamp(count, 1, size());
  if (count == 1) {
    task(TeamMember(0, 1, nullptr));
    return;
  }
  task_ = &task;
  count_ = count;
  barrier_.emplace(count);
  // Every worker wakes and reports back, those outside the task too, so none can still be reading this task's
  // state when the next run() changes it.
  unfinished_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  task(TeamMember(0, count, &*barrier_));
  for (int left = unfinished_workers_.load(std::memory_order_acquire); left != 0;
       left = unfinished_workers_.load(std::memory_order_acquire)) {
    unfinished_workers_.wait(left, std::memory_order_acquire);
  }
}

void ThreadTeam::work(int index) {
  std::uint64_t seen = 0;
  while (true) {
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_) return;
    if (index < count_) (*task_)(TeamMember(index, count_, &*barrier_));
    if (unfinished_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) unfinished_workers_.notify_one();
  }
}

}  // namespace corgy::blas
