// ThreadTeam: the worker threads of the OpenBLAS backend. They run one task together, wait a moment for the next
// (a model's layers come back to back), then sleep.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace corgy::blas {

/// Which CPU each member of a team last ran on, so a member that waits for the others spins only while it has a CPU
/// of its own: spinning on a CPU that the awaited thread shares keeps that thread from running (with two threads on
/// one CPU, every hand-over took a whole spin time, 100 us).
class CpuPlacement {
 public:
  explicit CpuPlacement(int members);
  /// Records where `member` runs now.
  void note(int member);
  /// True when no other of members [0, count) was last seen on `member`'s CPU.
  bool alone(int member, int count) const;

 private:
  std::unique_ptr<std::atomic<int>[]> cpus_;
  int members_;
};

/// A barrier for a fixed number of threads that spins briefly before sleeping in the kernel: the members of a
/// layer's task usually arrive within microseconds of each other, far less than a sleep and wake-up costs.
class SpinBarrier {
 public:
  SpinBarrier(int count, CpuPlacement* placement) : count_(count), remaining_(count), placement_(placement) {}
  void arrive_and_wait(int member);

 private:
  const int count_;
  std::atomic<int> remaining_;
  std::atomic<std::uint32_t> phase_{0};
  CpuPlacement* placement_;
};

/// One member's view of a running task: its index, the member count, and a barrier among the members.
class TeamMember {
 public:
  struct Range {
    std::size_t begin;
    std::size_t end;
  };

  TeamMember(int index, int count, SpinBarrier* barrier) : index_(index), count_(count), barrier_(barrier) {}

  int index() const { return index_; }
  int count() const { return count_; }
  /// This member's contiguous share of [0, total), cut at multiples of `granule` (static partition).
  Range share(std::size_t total, std::size_t granule = 1) const;
  /// Waits until every member of the task has called sync() as often as this one.
  void sync() const {
    if (barrier_) barrier_->arrive_and_wait(index_);
  }

 private:
  int index_;
  int count_;
  SpinBarrier* barrier_;
};

/// Items [0, count) shared among `members` members: each starts with its own contiguous share (TeamMember::share's)
/// and takes it in order, then takes what is left of the others' shares from their ends, one item at a time.
///
/// Why own shares first: where consecutive items are neighbouring pixels or channels, each member then works, layer
/// after layer, on the same part of each tensor, which the layers before left in its own core's caches; items handed
/// out in turn from one counter put every other chunk of a layer's input and output in the other core's (on an
/// EPYC whose two vCPUs share no L3, ResNet-50's 56x56 64 -> 256 1x1 layer took 0.50 ms at two threads so, 0.34 with
/// own shares first, 0.58 at one thread). Why take the others' items at all: on a shared machine a member that the OS
/// or the hypervisor holds back for a while then simply takes fewer items, instead of every member waiting for it.
class WorkQueue {
 public:
  /// corgy::Error when count does not fit 32 bits (a layer never has that many items).
  WorkQueue(std::size_t count, int members);
  /// The next item for `member` (its index below members) into `item`; false when none is left.
  bool next(const TeamMember& member, std::size_t& item);

 private:
  // Member i's items not taken yet, [begin, end), as begin << 32 | end: its owner moves begin, the others end.
  struct alignas(64) Remaining {
    std::atomic<std::uint64_t> range{0};
  };
  std::unique_ptr<Remaining[]> remaining_;
  int members_;
};

/// A fixed set of threads that run tasks together: run() executes the task on the caller (member 0) and on
/// count - 1 workers, and returns when all are done.
///
/// Why not OpenMP: libgomp's idle workers busy-wait for milliseconds after each parallel loop. Whenever another
/// process or one of the application's threads wants a core (CI machines, a user's program), a spinning worker
/// keeps it from the thread the team is waiting for, and a 2-thread forward of the MNIST network ran 50x slower
/// than a 1-thread one. These workers and barriers spin for at most kSpinTime (the next layer of a forward usually
/// arrives within it: waking a sleeping thread costs tens of microseconds here, more than a small layer's work),
/// then sleep in the kernel (C++20 atomic waits).
class ThreadTeam {
 public:
  /// Starts size - 1 workers (the caller of run() is the first member). With `pin_workers`, each worker is pinned to
  /// one CPU of those the process may use, round robin over all teams (the caller's thread is left alone): on a busy
  /// machine the scheduler otherwise wakes the workers on the caller's CPU, where they take turns instead of running
  /// in parallel (a 2-thread MNIST forward ran 1.8x slower than 1 thread here; pinned, 1.45x faster). run() moves a
  /// worker pinned to the CPU its caller runs on to another one: the scheduler leaves a caller where it is while the
  /// worker sleeps, and the two then took turns on one CPU in about one process of three.
  explicit ThreadTeam(int size, bool pin_workers = true);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return size_; }
  /// Runs task on members 0 .. count - 1 (count is clamped to [1, size()]); member 0 is the calling thread.
  void run(int count, const std::function<void(const TeamMember&)>& task);

 private:
  void work(int index);
  void move_workers_off_callers_cpu(int count);

  // Set before the first worker starts: the workers read it while the constructor is still starting the others,
  // so it cannot be workers_.size().
  const int size_;
  std::vector<std::thread> workers_;
  std::vector<int> worker_cpus_;   // the CPU each worker is pinned to, -1 when it is not; changed by run() only
  std::vector<int> allowed_cpus_;  // empty when workers are not pinned
  std::atomic<std::uint32_t> generation_{0};  // 32 bits: a futex word, so waits and notifies need no proxy
  std::atomic<int> unfinished_workers_{0};
  const std::function<void(const TeamMember&)>* task_ = nullptr;
  int count_ = 1;
  bool stopping_ = false;
  CpuPlacement placement_;
  std::optional<SpinBarrier> barrier_;
};

}  // namespace corgy::blas
