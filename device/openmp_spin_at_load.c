/* libdlf_openmp_spin: gives libgomp a short idle spin before libgomp reads its environment.

   OpenMP's idle threads spin before they sleep, and libgomp's default spin (300,000 rounds,
   some milliseconds) starves another busy process on the same cores. libgomp reads
   GOMP_SPINCOUNT once, in its own constructor, so the setting must be in the environment before
   that runs — before any code of libdlf, which depends on libgomp and so starts after it. This
   library depends on nothing but libc, and libdlf lists it after libgomp: the dynamic loader
   starts it first (of libraries unrelated by dependencies, the one loaded later starts
   earlier). libdlf's own start takes the variable out of the environment again, so the program
   and its children see the environment they were given. A program that chose a policy
   (OMP_WAIT_POLICY or GOMP_SPINCOUNT) keeps it. */
#include <stdlib.h>

static int set_at_load = 0;

__attribute__((constructor)) static void shorten_openmp_spin(void) {
  if (getenv("OMP_WAIT_POLICY") == NULL && getenv("GOMP_SPINCOUNT") == NULL)
    set_at_load = setenv("GOMP_SPINCOUNT", "10000", 0) == 0;
}

/* Whether GOMP_SPINCOUNT was set here (libdlf then removes it). */
int dlf_openmp_spin_set_at_load(void) { return set_at_load; }
