// ThreadTeam: the worker threads of the OpenBLAS backend. They run one task together, then sleep.
#pragma once

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

namespace corgy::blas {

/// One member's view of a running task: its index, the member count, and a barrier among the members.
class TeamMember {
 public:
  struct Range {
    std::size_t begin;
    std::size_t end;
  };

  TeamMember(int index, int count, std::barrier<>* barrier) : index_(index), count_(count), barrier_(barrier) {}

  int index() const { return index_; }
  int count() const { return count_; }
  /// This member's contiguous share of [0, total), cut at multiples of `granule` (static partition).
  Range share(std::size_t total, std::size_t granule = 1) const;
  /// Waits until every member of the task has called sync() as often as this one.
  void sync() const {
    if (barrier_) barrier_->arrive_and_wait();
  }

 private:
  int index_;
  int count_;
  std::barrier<>* barrier_;
};

/// A fixed set of threads that run tasks together: run() executes the task on the caller (member 0) and on
/// count - 1 workers, and returns when all are done.
///
/// Why not OpenMP: libgomp's idle workers busy-wait for milliseconds after each parallel loop. Whenever another
/// process or one of the application's threads wants a core (CI machines, a user's program), a spinning worker
/// keeps it from the thread the team is waiting for, and a 2-thread forward of the MNIST network ran 50x slower
/// than a 1-thread one. These workers and barriers sleep in the kernel (C++20 atomic waits) once they are idle.
class ThreadTeam {
 public:
  /// Starts size - 1 workers (the caller of run() is the first member).
  explicit ThreadTeam(int size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// Runs task on members 0 .. count - 1 (count is clamped to [1, size()]); member 0 is the calling thread.
  void run(int count, const std::function<void(const TeamMember&)>& task);

 private:
  void work(int index);

  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> unfinished_workers_{0};
  const std::function<void(const TeamMember&)>* task_ = nullptr;
  int count_ = 1;
  bool stopping_ = false;
  std::optional<std::barrier<>> barrier_;
};

}  // namespace corgy::blas
