// A model replicated over the data-parallel ranks, whole on each or, for a family with a split
// rule, its layers split over a tensor-parallel group (Megatron's linears).
#include <dlf/autograd/grad_mode.h>
#include <dlf/parallel/tensor_parallel.h>

#include "parts.h"

namespace dlf::train {
namespace {

class ReplicaModel final : public RankModel {
 public:
  ReplicaModel(const models::Family& family, const std::string& model, parallel::Mesh& mesh,
               const nn::NamedTensors& whole, const PartOptions& options, int64_t vocab)
      : RankModel(mesh, options), loss_(family.loss) {
    const parallel::Layout& l = mesh.layout();
    DLF_CHECK(l.pp == 1, model, " has no pipeline stages: --pp is for the GPT models");
    DLF_CHECK(l.tp == 1 || family.tp_split, model,
              " trains data-parallel only: --tp is for the GPT, BERT and ViT models");
    model_ = family.build(
        model, {.linears = l.tp > 1 ? parallel::megatron_linears(mesh.tp()) : nn::LinearMaker{},
                .vocab = vocab});
    if (l.tp > 1) {
      tp_split_ = family.tp_split;
      parallel::load_shards(*model_, whole, tp_split_, mesh.tp());
    } else {
      model_->load_state_dict(whole);
    }
    model_->to(device());
    model_->recompute(options.recompute);
    // DDP's and FSDP's collectives are ops of the step
    if (options.compile) compiled_.emplace(step_, options.skip_passes);
    wrap_data_parallel();
  }

  nn::Module& module() override { return *model_; }

  double step(const std::vector<Tensor>& batch) override {
    return average(run_step(batch).item<double>());
  }
  Tensor run_step(const std::vector<Tensor>& batch) override {
    std::vector<Tensor> on_device;
    for (const Tensor& t : batch) on_device.push_back(t.to(device()));
    return (compiled_ ? (*compiled_)(on_device) : step_(on_device))[0];
  }

  models::Evaluation evaluate(const models::Task& task) override {
    if (fsdp_) fsdp_->unshard();
    const models::Evaluation e =
        task.evaluate({.module = model_.get(),
                       .loss = [this](const std::vector<Tensor>& b) { return replica_loss(b); },
                       .average = [this](double value) { return average(value); },
                       .device = device()});
    if (fsdp_) fsdp_->reshard();
    return e;
  }

  double loss(const std::vector<Tensor>& batch) override {
    if (fsdp_) fsdp_->unshard();
    const double value = replica_loss(batch);
    if (fsdp_) fsdp_->reshard();
    return value;
  }

  parallel::NormScope norm_scope() const override {
    if (!tp_split_) return {};
    // A split parameter from every tp rank, a replicated one from tp rank 0.
    return parallel::norm_scope_of(model_->named_parameters(),
                                   [this](const std::string& name) {
                                     return mesh_.tp_rank() == 0 ||
                                            tp_split_(name) != parallel::Split::none;
                                   },
                                   {&mesh_.tp()});
  }

  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) override {
    // The replicas hold the same: the first gathers (under ZeRO-3 every replica gathers its
    // shards whole, and the first reads them), over its tp group when split.
    const bool first_replica = mesh_.dp_rank() == 0;
    auto whole_model = [this] {
      return tp_split_ ? parallel::gather_state_dict(*model_, tp_split_, mesh_.tp())
                       : model_->state_dict();
    };
    nn::NamedTensors model =
        fsdp_ ? fsdp_->whole_copy(whole_model, first_replica) : nn::NamedTensors();
    if (!first_replica) return {};
    if (!fsdp_) model = whole_model();
    if (!tp_split_) return {std::move(model), optimizer_state};
    nn::NamedTensors state = parallel::gather_state(optimizer_state, tp_split_, mesh_.tp());
    if (mesh_.tp_rank() != 0) return {};
    return {std::move(model), std::move(state)};
  }

  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const override {
    if (!tp_split_) return whole;
    return parallel::shard_state(whole, tp_split_, mesh_.tp());
  }

 private:
  // The family's loss of a batch without gradients, averaged over the replicas (the whole model
  // at hand).
  double replica_loss(const std::vector<Tensor>& batch) {
    autograd::NoGradGuard no_grad;
    std::vector<Tensor> on_device;
    for (const Tensor& t : batch) on_device.push_back(t.to(device()));
    return average(loss_(*model_, on_device).item<double>());
  }
  // The family's loss, what it keeps for backward counted as activations.
  Tensor scoped_loss(const std::vector<Tensor>& batch) const {
    MemoryScope activations(MemoryCategory::activations);
    return loss_(*model_, batch);
  }

  std::function<Tensor(const nn::Module&, const std::vector<Tensor>&)> loss_;
  std::unique_ptr<nn::Module> model_;
  parallel::SplitRule tp_split_;  // empty without tensor parallelism
  /// ZeRO-3's gather of what no block holds, the loss, its backward, the gradients' reduction
  /// and after_backward_: run eagerly, or (--compile) captured as one graph in compiled_
  graph::StepFn step_ = graph::backward_step(
      [this](const std::vector<Tensor>& batch) {
        if (fsdp_) fsdp_->unshard();
        return scoped_loss(batch);
      },
      [this] { finish_backward(); });
};

}  // namespace

std::unique_ptr<RankModel> make_replica_model(const models::Family& family,
                                              const std::string& model, parallel::Mesh& mesh,
                                              const nn::NamedTensors& whole,
                                              const PartOptions& options, int64_t vocab) {
  return std::make_unique<ReplicaModel>(family, model, mesh, whole, options, vocab);
}

}  // namespace dlf::train
