// One rank of a GPT over a dp x tp x pp mesh (Megatron-LM's 3-D parallelism): its pipeline
// stage of the model, sharded over its tp group (models::ParallelGPT); its replica's rows cut
// into micro-batches that flow through the pipeline (1F1B, GPipe or interleaved); gradients
// averaged over dp once per step (DDP, overlapping the last micro-batch's backward) and the
// tied embedding's summed over the pipeline's two ends. One device is the 1 x 1 x 1 mesh.
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/transfer.h>

#include <map>

#include "parts.h"

namespace dlf::train {
namespace {

// The head on the last stage is a copy of wte: its state is wte's, so whole states keep wte's.
constexpr const char* kHeadCopy = "lm_head.weight";
constexpr const char* kEmbedding = "transformer.wte.weight";

class PipelineModel final : public RankModel {
 public:
  PipelineModel(const models::GPTConfig& config, parallel::Mesh& mesh,
                const nn::NamedTensors& whole, const PartOptions& options)
      : RankModel(mesh, options) {
    DLF_CHECK(options.micro_batches > 0, "micro-batches must be positive, got ",
              options.micro_batches);
    parallel::check_schedule(options.schedule, options.virtual_stages, mesh.layout().pp,
                             options.micro_batches);
    model_ = std::make_unique<models::ParallelGPT>(config, mesh.tp(), mesh.pp_rank(),
                                                   mesh.layout().pp, options.virtual_stages);
    model_->to(mesh.tp().device());
    model_->load_shard(whole);
    model_->recompute(options.recompute);
    if (options.compile) {
      // The whole step, its collectives as ops: tensor parallelism's in forward and backward,
      // the pipeline's sends and receives, DDP's reductions as backward finishes each bucket.
      compiled_.emplace(
          [this](const std::vector<Tensor>& batch) {
            return std::vector<Tensor>{train_step(batch[0], batch[1])};
          },
          options.skip_passes);
    }
    // The tied weight's gradient is summed with its copy's part by part under ZeRO-2 and -3:
    // alone in its bucket, the two copies' parts hold the same elements.
    std::vector<Tensor> tied;
    if (model_->tied_weight().defined()) tied.push_back(model_->tied_weight());
    wrap_data_parallel(tied);
  }

  nn::Module& module() override { return *model_; }

  double step(const std::vector<Tensor>& batch) override { return run_step(batch).item<double>(); }
  Tensor run_step(const std::vector<Tensor>& batch) override {
    if (!compiled_) return train_step(batch[0], batch[1]);
    return (*compiled_)({batch[0].to(device()), batch[1].to(device())})[0];
  }

  models::Evaluation evaluate(const models::Task& task) override {
    return task.evaluate(
        {.loss = [this](const std::vector<Tensor>& b) { return loss(b); }, .device = device()});
  }

  double loss(const std::vector<Tensor>& batch) override {
    return run(batch[0], batch[1], true).item<double>();
  }

  parallel::NormScope norm_scope() const override {
    return parallel::norm_scope_of(model_->named_parameters(),
                                   [this](const std::string& name) {
                                     return name != kHeadCopy &&
                                            (mesh_.tp_rank() == 0 || model_->sharded(name));
                                   },
                                   {&mesh_.tp(), &mesh_.pp()});
  }

  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) override {
    // The replicas hold the same: the first gathers (under ZeRO-3 every replica gathers its
    // shards whole, and the first reads them).
    const bool first_replica = mesh_.dp_rank() == 0;
    auto whole_model = [this] { return model_->whole_state_dict(); };
    nn::NamedTensors model =
        fsdp_ ? fsdp_->whole_copy(whole_model, first_replica) : nn::NamedTensors();
    if (!first_replica) return {};
    if (!fsdp_) model = whole_model();
    nn::NamedTensors state;
    for (const auto& [name, t] : optimizer_state) {
      if (name == "step") {
        if (model_->first) state.emplace_back(name, t);
      } else if (nn::optim::parameter_of_slot(name) != kHeadCopy) {
        state.emplace_back(name, model_->gather(nn::optim::parameter_of_slot(name), t));
      }
    }
    if (mesh_.tp_rank() != 0) return {};
    parallel::Communicator& pp = mesh_.pp();
    if (pp.rank() != 0) {
      parallel::send_named(pp, model, 0);
      parallel::send_named(pp, state, 0);
      return {};
    }
    for (int s = 1; s < pp.size(); ++s) {
      for (auto& named : {&model, &state}) {
        nn::NamedTensors part = parallel::recv_named(pp, s);
        named->insert(named->end(), part.begin(), part.end());
      }
    }
    return {std::move(model), std::move(state)};
  }

  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const override {
    std::map<std::string, std::vector<std::string>> mine;  // whole parameter -> this rank's
    for (const auto& [name, p] : model_->named_parameters())
      mine[name == kHeadCopy ? kEmbedding : name].push_back(name);
    nn::NamedTensors state;
    for (const auto& [name, t] : whole) {
      if (name == "step") {
        state.emplace_back(name, t);
        continue;
      }
      const std::string slot = name.substr(name.rfind('.'));
      auto it = mine.find(nn::optim::parameter_of_slot(name));
      if (it == mine.end()) continue;
      for (const std::string& p : it->second) state.emplace_back(p + slot, model_->shard(p, t));
    }
    return state;
  }

 private:
  parallel::PipelineStep pipeline_step(const Tensor& x, bool forward_only) const {
    const int m = options_.micro_batches;
    DLF_CHECK(x.dim() == 2 && x.size(0) % m == 0, "a replica's batch of ", x.size(0),
              " sequences does not split into ", m, " micro-batches");
    return {.micro_batches = m,
            .schedule = options_.schedule,
            .virtual_stages = options_.virtual_stages,
            .activation_shape = {x.size(0) / m, x.size(1), model_->config().dim},
            .activation_dtype = model_->residual_dtype(),
            .forward_only = forward_only,
            .slices = &mesh_.tp()};
  }

  // The pipeline's forward (and backward) of x, y: the mean loss, averaged over the replicas,
  // as an f64 [1] on the device.
  Tensor run(const Tensor& x, const Tensor& y, bool forward_only) {
    const parallel::PipelineStep step = pipeline_step(x, forward_only);
    const int64_t rows = step.activation_shape[0];
    if (fsdp_) fsdp_->unshard();
    Tensor global =
        parallel::run_pipeline(mesh_.pp(), step, [&](const Tensor& input, int m, int chunk) {
          MemoryScope activations(MemoryCategory::activations);
          const models::ParallelGPT& model = *model_;
          const bool embeds = model.first && chunk == 0;
          const bool heads = model.last && chunk == options_.virtual_stages - 1;
          return model.forward(input, embeds ? x.narrow(0, m * rows, rows).to(device()) : Tensor(),
                               heads ? y.narrow(0, m * rows, rows).to(device()) : Tensor(), chunk);
        }).reshape({1});
    // The loss is on the last stage (the same on its tp ranks): to every stage, then averaged
    // over the replicas.
    if (fsdp_ && forward_only) fsdp_->reshard();
    mesh_.pp().allreduce(global);
    mesh_.dp().allreduce(global, parallel::ReduceOp::avg);
    return global;
  }

  // run() with backward, the gradients' reduction and tying, then after_backward_: the step
  // run_step() runs, eagerly or captured.
  Tensor train_step(const Tensor& x, const Tensor& y) {
    const Tensor loss = run(x, y, false);
    finish_backward([this] { model_->tie_gradients(mesh_.pp(), shards()); });
    return loss;
  }

  std::unique_ptr<models::ParallelGPT> model_;
};

}  // namespace

std::unique_ptr<RankModel> make_pipeline_model(const models::GPTConfig& config,
                                               parallel::Mesh& mesh, const nn::NamedTensors& whole,
                                               const PartOptions& options) {
  return std::make_unique<PipelineModel>(config, mesh, whole, options);
}

std::unique_ptr<RankModel> make_rank_model(const models::Family& family, const std::string& model,
                                           parallel::Mesh& mesh, const nn::NamedTensors& whole,
                                           const PartOptions& options, int64_t vocab) {
  if (family.gpt) return make_pipeline_model(family.gpt(model, vocab), mesh, whole, options);
  return make_replica_model(family, model, mesh, whole, options, vocab);
}

}  // namespace dlf::train
