// The one function of libdlf_openmp_spin (device/openmp_spin_at_load.c).
#pragma once

extern "C" {
/// Whether libdlf_openmp_spin put GOMP_SPINCOUNT in the environment when it loaded.
int dlf_openmp_spin_set_at_load();
}
