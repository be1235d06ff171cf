// `dlf calibrate`: this CPU as a sim spec.
#pragma once
#include <string>

namespace dlf::app {

/// `dlf calibrate`: measure_cpu()'s spec with measure_kernel_efficiency()'s table, as JSON, to
/// `out` (a file, replaced whole or left as it was) or standard output; a summary on standard
/// error.
void run_calibrate(const std::string& out);

}  // namespace dlf::app
