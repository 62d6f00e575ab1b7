/* Subcommands of the `scaffold` executable. Each takes argv with argv[0] = the subcommand name and
 * returns the process exit status. */
#ifndef SF_CLI_H
#define SF_CLI_H

int sf_cmd_generate_fractals(int argc, char **argv);
int sf_cmd_benchmark(int argc, char **argv);
int sf_cmd_jobs(int argc, char **argv);
int sf_cmd_run(int argc, char **argv);
int sf_cmd_rerun(int argc, char **argv);
int sf_cmd_report(int argc, char **argv);
int sf_cmd_compare(int argc, char **argv);
int sf_cmd_summary(int argc, char **argv);
int sf_cmd_steps(int argc, char **argv);
int sf_cmd_simulate(int argc, char **argv);
int sf_cmd_tune(int argc, char **argv);
int sf_cmd_calibrate(int argc, char **argv);
int sf_cmd_tune(int argc, char **argv);
int sf_cmd_calibrate(int argc, char **argv);

/* `scaffold benchmark`, before any work (src/cli/cmd_benchmark_checks.c): refuses, with exit status
 * 2 and a message naming where the key was set, what this build cannot run - the dataset layout,
 * the U-Net, the task graph (optimizer, slabs, spatial_ranks), the scheduler name, the global batch
 * against the volume counts and the memory. training = 0 (--datagen-only) checks the data side only.
 * Needs the rank layout (sf_dist_configure); starts nothing. */
struct sf_config;
void sf_benchmark_check_config(const struct sf_config *c, int training);

#endif
