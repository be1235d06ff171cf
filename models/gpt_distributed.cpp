#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/models/gpt_distributed.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/transfer.h>

#include <map>

namespace dlf::models {
namespace {

// The head on the last stage is a copy of wte: its state is wte's, so whole states keep wte's.
constexpr const char* kHeadCopy = "lm_head.weight";
constexpr const char* kEmbedding = "transformer.wte.weight";

}  // namespace

DistributedGPT::DistributedGPT(const GPTConfig& config, parallel::Mesh& mesh,
                               const nn::NamedTensors& whole, DistributedGPTOptions options)
    : mesh_(mesh), options_(options) {
  DLF_CHECK(options.micro_batches > 0, "micro-batches must be positive, got ",
            options.micro_batches);
  parallel::check_schedule(options.schedule, options.virtual_stages, mesh.layout().pp,
                           options.micro_batches);
  model_ = std::make_unique<ParallelGPT>(config, mesh.tp(), mesh.pp_rank(), mesh.layout().pp,
                                         options.virtual_stages);
  model_->to(mesh.tp().device());
  model_->load_shard(whole);
  if (options.compile) {
    // The whole step, its collectives as ops: tensor parallelism's in forward and backward,
    // the pipeline's sends and receives, DDP's reductions as backward finishes each bucket.
    compiled_.emplace([this](const std::vector<Tensor>& batch) {
      return std::vector<Tensor>{train_step(batch[0], batch[1])};
    });
  }
  // The tied weight's gradient is summed with its copy's part by part under ZeRO-2 and -3:
  // alone in its bucket, the two copies' parts hold the same elements.
  std::vector<Tensor> tied;
  if (model_->tied_weight().defined()) tied.push_back(model_->tied_weight());
  if (mesh.layout().dp > 1 && options.zero == 3) {
    fsdp_.emplace(*model_, mesh.dp(),
                  parallel::FSDPOptions{
                      .backward_passes = options.micro_batches,
                      .reduce_in_bf16 = options.reduce_in_bf16,
                      .own_units = tied,
                      .shards_on = options.offload_params ? std::optional(kCPU) : std::nullopt});
  } else if (mesh.layout().dp > 1) {
    ddp_.emplace(*model_, mesh.dp(),
                 parallel::DDPOptions{.bucket_bytes = options.bucket_bytes,
                                      .backward_passes = options.micro_batches,
                                      .shard_gradients = options.zero == 2,
                                      .reduce_in_bf16 = options.reduce_in_bf16,
                                      .own_buckets = tied});
  }
}

parallel::PipelineStep DistributedGPT::pipeline_step(const Tensor& x, bool forward_only) const {
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

Tensor DistributedGPT::run(const Tensor& x, const Tensor& y, bool forward_only) {
  const parallel::PipelineStep step = pipeline_step(x, forward_only);
  const Device device = mesh_.tp().device();
  const int64_t rows = step.activation_shape[0];
  if (fsdp_) fsdp_->unshard();
  Tensor global =
      parallel::run_pipeline(mesh_.pp(), step, [&](const Tensor& input, int m, int chunk) {
        MemoryScope activations(MemoryCategory::activations);
        const ParallelGPT& model = *model_;
        const bool embeds = model.first && chunk == 0;
        const bool heads = model.last && chunk == options_.virtual_stages - 1;
        return model.forward(input, embeds ? x.narrow(0, m * rows, rows).to(device) : Tensor(),
                             heads ? y.narrow(0, m * rows, rows).to(device) : Tensor(), chunk);
      }).reshape({1});
  // The loss is on the last stage (the same on its tp ranks): to every stage, then averaged
  // over the replicas.
  if (fsdp_ && forward_only) fsdp_->reshard();
  mesh_.pp().allreduce(global);
  mesh_.dp().allreduce(global, parallel::ReduceOp::avg);
  return global;
}

Tensor DistributedGPT::train_step(const Tensor& x, const Tensor& y) {
  const Tensor loss = run(x, y, false);
  if (ddp_) ddp_->synchronize();
  if (fsdp_) fsdp_->synchronize();
  model_->tie_gradients(mesh_.pp(), shards());
  if (after_backward_) after_backward_();
  return loss;
}

double DistributedGPT::forward_backward(const Tensor& x, const Tensor& y) {
  return step(x, y).item<double>();
}

Tensor DistributedGPT::step(const Tensor& x, const Tensor& y) {
  if (!compiled_) return train_step(x, y);
  const Device device = mesh_.tp().device();
  return (*compiled_)({x.to(device), y.to(device)})[0];
}

double DistributedGPT::loss(const Tensor& x, const Tensor& y) {
  return run(x, y, true).item<double>();
}

parallel::NormScope DistributedGPT::norm_scope() const {
  return parallel::norm_scope_of(model_->named_parameters(),
                                 [this](const std::string& name) {
                                   return name != kHeadCopy &&
                                          (mesh_.tp_rank() == 0 || model_->sharded(name));
                                 },
                                 {&mesh_.tp(), &mesh_.pp()});
}

double DistributedGPT::clip_grad_norm(double max_norm) {
  return parallel::clip_grad_norm(model_->parameters(), max_norm, norm_scope());
}

std::pair<nn::NamedTensors, nn::NamedTensors> DistributedGPT::gather_whole(
    const nn::NamedTensors& optimizer_state) {
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

nn::NamedTensors DistributedGPT::shard_optimizer_state(const nn::NamedTensors& whole) const {
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

}  // namespace dlf::models
