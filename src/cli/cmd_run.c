/* `scaffold run`: placeholder until the module that owns this command lands. */
#include "scaffold/cli.h"
#include "scaffold/common.h"

int sf_cmd_run(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  fprintf(stderr, "scaffold: error: 'run' is not implemented yet\n");
  return SF_EXIT_FAILURE;
}
