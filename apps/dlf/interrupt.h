// SIGINT and SIGTERM during `dlf train`: the first asks the run to stop at the next step
// boundary — every rank together — and save; a second ends the process at once.
#pragma once

namespace dlf::app {

/// Installs the handlers for the rest of the process.
void install_interrupt_handlers();
/// The signal that asked the run to stop (SIGINT, SIGTERM), or 0.
int interrupt_signal();
/// "SIGINT", "SIGTERM".
const char* signal_name(int signal);

}  // namespace dlf::app
