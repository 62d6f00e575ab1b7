/* `scaffold-sim`: training steps of a config's task graph under StarPU's SimGrid mode (built only against
 * a SimGrid StarPU: scripts/build-sim). StarPU provides the process's main() there, starts SimGrid on the
 * platform of STARPU_HOSTNAME's bus files, and calls this main, renamed starpu_main by the build. Run it
 * through `scaffold simulate`, which prepares the machine class (docs/simulation.md). */
#include "scaffold/steps.h"

int main(int argc, char **argv) { return sf_steps_main(argc, argv, 1); }
