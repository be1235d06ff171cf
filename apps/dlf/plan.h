// `dlf plan`: per-device memory and predicted step time of a training layout, on meta devices
// (plan::plan_request does the work).
#pragma once
#include <dlf/plan/request.h>

namespace dlf::app {

using PlanCommand = plan::PlanRequest;

/// plan::plan_request, its answer on stdout.
void run_plan(const PlanCommand& command);

}  // namespace dlf::app
