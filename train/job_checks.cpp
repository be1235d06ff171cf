// What a job's devices and flags can run, refused before anything runs.
#include <dlf/train/trainer.h>

namespace dlf::train {

void check_job(const TrainJob& job, DeviceType device) {
  const PartOptions& p = job.part;
  const bool offloaded = job.offload_optimizer || p.offload_params;
  const char* offload = p.offload_params ? "params" : "optimizer";
  DLF_CHECK(!p.compile || p.zero < 2 || job.layout.dp == 1 || !offloaded, "--compile --zero ",
            p.zero, " --offload ", offload, ": ZeRO-", p.zero,
            "'s update must run inside the graph, which holds its gradient parts, and an "
            "offloaded update runs on the host after it (compile without --offload, or with "
            "--zero 1)");
  DLF_CHECK(!offloaded || device != DeviceType::cpu, "--offload ", offload,
            ": on the cpu device the optimizer state is in host memory already; offload is for "
            "simulated accelerators (--device sim)");
  DLF_CHECK(p.zero < 3 || job.check_replicas == 0,
            "--check-replicas compares whole replicas: under --zero 3 each rank holds its own "
            "shard of the parameters");
  const int64_t batch = job.run.batch;
  DLF_CHECK(batch % job.layout.dp == 0, "--batch ", batch, " does not split over dp ",
            job.layout.dp, ": each replica takes an equal share, so the batch must be a multiple");
  DLF_CHECK(job.family.gpt || job.micro_batch == 0, "--micro-batch ", job.micro_batch, ": ",
            job.run.model,
            " takes its replica's rows at once (micro-batches are the GPT models', through a "
            "pipeline or with their gradients accumulated)");
  const int64_t micro =
      job.micro_batch > 0 ? job.micro_batch : default_micro_batch(job.layout, batch);
  DLF_CHECK(batch / job.layout.dp % micro == 0, "a replica's ", batch / job.layout.dp,
            " sequences do not split into micro-batches of ", micro, " (--micro-batch)");
}

}  // namespace dlf::train
