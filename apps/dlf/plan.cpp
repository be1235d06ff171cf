#include "plan.h"

#include <cstdio>

#include <dlf/models/plan.h>
#include <dlf/models/registry.h>

#include "devices.h"

namespace dlf::app {

void run_plan(const PlanCommand& c) {
  const int64_t tp_pp = int64_t(c.tp) * c.pp;  // each at most 2^20: no overflow in 64 bits
  DLF_CHECK(c.devices % tp_pp == 0, "--devices ", c.devices,
            " is not a multiple of tp x pp = ", tp_pp);
  const int64_t dp = c.dp > 0 ? c.dp : c.devices / tp_pp;
  DLF_CHECK(dp * tp_pp == c.devices, "dp ", dp, " x tp ", c.tp, " x pp ", c.pp, " = ", dp * tp_pp,
            " devices, but --devices is ", c.devices);
  const DeviceArg device = parse_device_arg(c.device);
  DLF_CHECK(device.type != DeviceType::cpu, "--device '", c.device,
            "': plans are for sim:PRESET or sim:SPEC.json (run on meta devices)");
  DLF_CHECK(c.dtype == "f32" || c.dtype == "bf16", "--dtype is f32 or bf16, not '", c.dtype, "'");
  const models::Plan plan = models::plan_gpt({.model = models::gpt_config(c.model),
                                              .layout = {.dp = int(dp), .tp = c.tp, .pp = c.pp},
                                              .spec = device.spec,
                                              .global_batch = c.batch,
                                              .micro_batch = c.micro_batch,
                                              .seq = c.seq,
                                              .dtype = c.dtype == "bf16" ? DType::bf16 : DType::f32,
                                              .schedule = parse_schedule(c.schedule)});
  if (c.json) {
    std::printf("%s\n", models::to_json_line(plan).c_str());
  } else {
    std::printf("%s", models::describe(plan).c_str());
  }
}

}  // namespace dlf::app
