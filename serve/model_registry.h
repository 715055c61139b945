// The model versions the server serves, their state (loading, ready, failed) and their batchers.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve/dynamic_batcher.h"
#include "serve/metrics.h"
#include "serve/model_repository.h"

namespace corgy::serve {

enum class ModelState { loading, ready, failed };

/// One model version. Its signature and batcher exist once it is ready, and never change after.
class ServedModel {
 public:
  ServedModel(RepositoryEntry entry, ModelMetrics& metrics);
  /// Loads the instances (config.instances corgy models, each planned once) and starts the batcher; on failure the
  /// state is `failed` and reason() says why. Returns whether it is ready.
  bool load();
  /// Stops the batcher after its queue is drained and joins its workers.
  void stop();

  const RepositoryEntry& entry() const { return entry_; }
  ModelState state() const;
  /// Why it is not ready ("loading", or the load error).
  std::string reason() const;
  /// Only when ready.
  const ModelSignature& signature() const { return signature_; }
  DynamicBatcher& batcher() { return *batcher_; }
  ModelMetrics& metrics() { return metrics_; }

 private:
  const RepositoryEntry entry_;
  ModelMetrics& metrics_;
  mutable std::mutex mutex_;
  ModelState state_ = ModelState::loading;
  std::string reason_ = "loading";
  ModelSignature signature_;
  std::unique_ptr<DynamicBatcher> batcher_;
};

class ModelRegistry {
 public:
  ModelRegistry(const std::vector<RepositoryEntry>& entries, Metrics& metrics);
  /// Loads every model version in turn, on the calling thread; returns false when any failed (the others still
  /// load).
  bool load_all();
  /// Drains and stops every batcher.
  void stop_all();
  /// The version (the highest when `version` is empty), or null for an unknown model or version.
  ServedModel* find(const std::string& name, const std::string& version);
  bool has_model(const std::string& name) const;
  /// The versions of a model, ascending.
  std::vector<std::string> versions(const std::string& name) const;
  /// Whether every model version is ready.
  bool all_ready() const;

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;  // by name, then version ascending (scan_repository's order)
};

}  // namespace corgy::serve
