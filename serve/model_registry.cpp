#include "serve/model_registry.h"

#include <fmt/format.h>

#include <cstdio>

namespace corgy::serve {

ServedModel::ServedModel(RepositoryEntry entry, ModelMetrics& metrics) : entry_(std::move(entry)), metrics_(metrics) {}

bool ServedModel::load() {
  try {
    LoadedModel loaded = load_model(entry_);
    auto batcher = std::make_unique<DynamicBatcher>(std::move(loaded.instances), entry_.config, metrics_);
    std::lock_guard lock(mutex_);
    signature_ = std::move(loaded.signature);
    batcher_ = std::move(batcher);
    state_ = ModelState::ready;
    reason_.clear();
    return true;
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    state_ = ModelState::failed;
    reason_ = e.what();
    return false;
  }
}

void ServedModel::stop() {
  std::unique_ptr<DynamicBatcher> batcher;
  {
    std::lock_guard lock(mutex_);
    if (state_ == ModelState::ready) batcher = std::move(batcher_);
    state_ = ModelState::failed;
    reason_ = "the server is shutting down";
  }
  batcher.reset();  // drains the queue, joins the workers
}

ModelState ServedModel::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::string ServedModel::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

ModelRegistry::ModelRegistry(const std::vector<RepositoryEntry>& entries, Metrics& metrics) {
  for (const RepositoryEntry& entry : entries) {
    models_.push_back(std::make_unique<ServedModel>(entry, metrics.model(entry.name, entry.version)));
  }
}

bool ModelRegistry::load_all() {
  bool all = true;
  for (const std::unique_ptr<ServedModel>& model : models_) {
    const RepositoryEntry& e = model->entry();
    if (model->load()) {
      const ModelSignature& s = model->signature();
      std::fprintf(stderr, "corgy-serve: model '%s' version %s ready (%s, backend %s, %d instance(s))\n",
                   e.name.c_str(), e.version.c_str(), s.platform.c_str(), e.config.backend_names().c_str(),
                   e.config.instances);
    } else {
      std::fprintf(stderr, "corgy-serve: model '%s' version %s failed to load: %s\n", e.name.c_str(), e.version.c_str(),
                   model->reason().c_str());
      all = false;
    }
  }
  return all;
}

void ModelRegistry::stop_all() {
  for (const std::unique_ptr<ServedModel>& model : models_) model->stop();
}

ServedModel* ModelRegistry::find(const std::string& name, const std::string& version) {
  ServedModel* found = nullptr;
  for (const std::unique_ptr<ServedModel>& model : models_) {
    if (model->entry().name != name) continue;
    if (version.empty() || model->entry().version == version) found = model.get();  // ascending: the last is highest
  }
  return found;
}

bool ModelRegistry::has_model(const std::string& name) const {
  for (const std::unique_ptr<ServedModel>& model : models_) {
    if (model->entry().name == name) return true;
  }
  return false;
}

std::vector<std::string> ModelRegistry::versions(const std::string& name) const {
  std::vector<std::string> out;
  for (const std::unique_ptr<ServedModel>& model : models_) {
    if (model->entry().name == name) out.push_back(model->entry().version);
  }
  return out;
}

bool ModelRegistry::all_ready() const {
  for (const std::unique_ptr<ServedModel>& model : models_) {
    if (model->state() != ModelState::ready) return false;
  }
  return true;
}

}  // namespace corgy::serve
