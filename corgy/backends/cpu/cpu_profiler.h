// CpuProfiler: the per-layer profile of a CPU backend (Backend::set_profiling), timed with a wall clock.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "corgy/backend.h"

namespace corgy::cpu {

/// A CPU backend's operations have finished when they return, so the wall time from one begin_layer() to the next
/// is the time of that layer's operations. The backend names what computed them with note().
class CpuProfiler {
 public:
  void set_enabled(bool enabled);
  bool enabled() const { return enabled_; }
  /// Closes the open entry and opens one for layer `index` (none for -1).
  void begin_layer(int index);
  /// Describes what computes the open entry's layer; several notes are joined with " + ". No-op when disabled or
  /// muted.
  void note(std::string_view algorithm);
  /// While muted, notes are dropped: a backend's own trial runs (plan-time tuning) leave no trace in the profile.
  /// Calls nest (a block's tuning runs its parts, which tune their own): each true needs its false.
  void set_muted(bool muted) { muted_ += muted ? 1 : -1; }
  /// The entries recorded since the last call (an open entry is closed first).
  std::vector<OpProfile> take();

 private:
  using Clock = std::chrono::steady_clock;
  void close_open_entry();

  bool enabled_ = false;
  int muted_ = 0;
  bool open_ = false;
  Clock::time_point started_{};
  OpProfile current_;
  std::vector<OpProfile> entries_;
};

}  // namespace corgy::cpu
