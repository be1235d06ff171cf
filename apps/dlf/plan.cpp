#include "plan.h"

#include <cstdio>

namespace dlf::app {

void run_plan(const PlanCommand& command) {
  plan::plan_request(command, [](const std::string& text) { std::fputs(text.c_str(), stdout); });
}

}  // namespace dlf::app
