/* `scaffold steps`: times training steps of the config's task graph on synthetic samples, on this machine
 * (scaffold/steps.h). The real counterpart of `scaffold simulate`, which predicts the same steps. */
#include "scaffold/cli.h"
#include "scaffold/steps.h"

int sf_cmd_steps(int argc, char **argv) { return sf_steps_main(argc, argv, 0); }
