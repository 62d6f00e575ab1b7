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
int sf_cmd_summary(int argc, char **argv);

#endif
