#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/device/host.h>
#include <dlf/train/rank_step.h>

namespace dlf::train {

RankStep::RankStep(std::unique_ptr<RankModel> model, parallel::Mesh& mesh,
                   const StepOptions& options)
    : model_(std::move(model)),
      mesh_(mesh),
      options_(options),
      params_(model_->module().named_parameters()),
      norm_scope_(model_->norm_scope()),
      optimizer_(nn::optim::decay_groups(params_, options.adamw.weight_decay), options.adamw),
      autocast_(autocast_for(options.precision, mesh.dp().device())) {
  for (const auto& [name, p] : params_) tensors_.push_back(p);
  // before ZeRO shards it: its parts too
  if (options.offload_optimizer) optimizer_.offload(host_of(mesh.dp().device()));
  if (options.part.zero > 0 && mesh.layout().dp > 1)
    zero_.emplace(optimizer_, mesh.dp(), *model_->shards());
  // Under graph mode clipping and the update run inside the captured step, ZeRO-1's and -2's
  // sharded update included (an offloaded update, whose copies to the host are not captured,
  // runs after it).
  update_in_graph_ =
      options.part.compile &&
      (zero_ ? zero_->capturable() : !optimizer_.offloaded_to() && optimizer_.capturable());
  norm_out_ = zeros({}, {.dtype = DType::f64, .device = mesh.dp().device()});
  if (update_in_graph_) {
    model_->set_after_backward([this] {
      const Tensor norm =
          zero_ ? zero_->clip_and_update(tensors_, options_.grad_clip, norm_scope_)
                : nn::optim::clip_and_update(
                      optimizer_, tensors_, options_.grad_clip, [this](const auto& ps) {
                        return parallel::global_norm_on_device(ps, norm_scope_);
                      });
      if (norm.defined()) norm_out_.copy_(norm);  // else no gradient: the norm stays 0
    });
  }
}

void RankStep::load_optimizer_state(const nn::NamedTensors& whole) {
  const nn::NamedTensors state =
      nn::optim::state_by_place(optimizer_, model_->shard_optimizer_state(whole), params_);
  if (zero_) {
    zero_->load_state_dict(state);
  } else {
    optimizer_.load_state_dict(state);
  }
}

void RankStep::begin_captured_step() {
  // The state the captured update updates, made before the capture (after a checkpoint's).
  if (!state_made_) {
    if (zero_) {
      zero_->init_state();
    } else {
      optimizer_.init_state();
    }
    state_made_ = true;
  }
  if (zero_) {
    zero_->begin_step();
  } else {
    optimizer_.begin_step();
  }
}

void RankStep::run_captured(const std::vector<Tensor>& batch) {
  DLF_CHECK(update_in_graph_,
            "run_captured: the step's update is not in its graph (compile "
            "it, with a capturable optimizer that is not offloaded)");
  begin_captured_step();
  AutocastGuard autocast(autocast_);
  (void)model_->run_step(batch);
}

RankStep::Result RankStep::forward_backward(const std::vector<Tensor>& batch) {
  if (update_in_graph_) begin_captured_step();
  Result r;
  {
    AutocastGuard autocast(autocast_);
    r.loss = model_->step(batch);
  }
  r.grad_norm = update_in_graph_ ? norm_out_.item<double>() : clip_gradients();
  return r;
}

double RankStep::clip_gradients() {
  DLF_CHECK(!update_in_graph_, "clip_gradients: the captured step clips its gradients itself");
  // ZeRO-2 alone has no whole gradients: its norm adds the ranks' pieces.
  return zero_ && !zero_->whole_gradients()
             ? zero_->clip_grad_norm(tensors_, options_.grad_clip, norm_scope_)
             : parallel::clip_grad_norm(tensors_, options_.grad_clip, norm_scope_);
}

void RankStep::update() {
  if (update_in_graph_) return;
  if (zero_) {
    zero_->step();
  } else {
    optimizer_.step();
  }
}

std::pair<nn::NamedTensors, nn::NamedTensors> RankStep::gather_whole() {
  const nn::NamedTensors state = zero_ ? zero_->consolidated_state_dict() : optimizer_.state_dict();
  return model_->gather_whole(nn::optim::state_by_name(optimizer_, state, params_));
}

models::Evaluation RankStep::evaluate(const models::Task& task) {
  AutocastGuard autocast(autocast_);
  return model_->evaluate(task);
}

}  // namespace dlf::train
