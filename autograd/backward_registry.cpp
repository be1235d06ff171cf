#include "autograd/backward_registry.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

namespace dlf::autograd {
namespace {
struct Tables {
  std::mutex mutex;
  std::unordered_map<std::string, BackwardDef> backward;
  std::set<std::string, std::less<>> nondifferentiable;
};
Tables& tables() {
  static Tables t;
  return t;
}
}  // namespace

void register_backward(const std::string& op, BackwardDef def) {
  Tables& t = tables();
  std::lock_guard lock(t.mutex);
  DLF_CHECK(!t.backward.contains(op) && !t.nondifferentiable.contains(op), "a backward for op '",
            op, "' is registered twice");
  t.backward.emplace(op, std::move(def));
}

void register_nondifferentiable(const std::string& op) {
  Tables& t = tables();
  std::lock_guard lock(t.mutex);
  DLF_CHECK(!t.backward.contains(op), "op '", op,
            "' has a backward and is marked nondifferentiable");
  t.nondifferentiable.insert(op);
}

std::vector<std::string> differentiable_ops() {
  Tables& t = tables();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> names;
  for (const auto& [name, def] : t.backward) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

const BackwardDef* find_backward(const OpDef& op) {
  Tables& t = tables();  // registration is finished before main(); reads need no lock
  auto it = t.backward.find(op.name);
  return it == t.backward.end() ? nullptr : &it->second;
}

bool is_nondifferentiable(const std::string& op) {
  Tables& t = tables();
  std::lock_guard lock(t.mutex);
  return t.nondifferentiable.contains(op);
}

}  // namespace dlf::autograd
