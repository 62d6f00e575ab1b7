/* `scaffold simulate` (private to the cli layer): the machine class a simulation runs on, the runs of
 * scaffold-sim (one per scheduler x worker mix), and the study tables. docs/simulation.md. */
#ifndef SF_CLI_SIMULATE_H
#define SF_CLI_SIMULATE_H

#include <stddef.h>
#include <stdio.h>

#define SIM_MAX_ENV 8
#define SIM_MAX_SCHEDS 32
#define SIM_MAX_MIXES 32

/* A machine class: perfmodels/<name>/ with sampling/{codelets/45,bus} from `scaffold calibrate`, or a
 * derived one (scripts/derive-class) whose DERIVED file says from what and how. */
typedef struct {
  char *dir, *name;          /* the class folder; name = its basename = STARPU_HOSTNAME */
  int ncpus, ncuda, nopencl; /* what its bus files (and SimGrid platform) hold */
  int has_cuda_models, has_opencl_models;
  char *derived;             /* NULL, or "derived from X: what changed" (every output says so) */
  char *env[SIM_MAX_ENV];    /* KEY=VALUE lines of DERIVED's `env =` (e.g. homogeneous device models) */
  int nenv;
} sim_class;

typedef struct {
  int ncpu, ncuda, nopencl;
} sim_mix;

/* Resolves NAME (perfmodels/NAME, under SF_PERFMODELS_DIR if set) or a folder path and reads what it
 * holds. Returns 0, or -1 with a message naming the file and what was expected. */
int sim_class_load(const char *arg, sim_class *c, char *err, size_t errlen);
void sim_class_free(sim_class *c);
/* A label for outputs: "NAME" or "NAME (derived from ...)". malloc'ed. */
char *sim_class_label(const sim_class *c);
/* Checks that the class can host a mix (worker counts within its devices, models for each kind). */
int sim_class_check_mix(const sim_class *c, const sim_mix *m, char *err, size_t errlen);

/* "A:B:C[,A:B:C...]" (ncpu:ncuda:nopencl). Returns the count, or -1 with a message. */
int sim_parse_mixes(const char *s, sim_mix *out, int max, char *err, size_t errlen);
/* "all" (the 12 policies of the schedulers profile) or "a,b,c", each checked against StarPU's. Returns
 * the count (names malloc'ed into out), or -1 with a message. */
int sim_parse_schedulers(const char *s, char **out, int max, char *err, size_t errlen);

/* The network between the ranks of a multi-rank simulation: a line of configs/networks.txt, or a SimGrid
 * platform file of the user's (file set; its hosts must be rank0, rank1, ...). */
typedef struct {
  char name[64], what[256], file[1024];
  double latency_s, bandwidth_Bps; /* a named network's */
} sim_network;

/* NAME (a line of file, default configs/networks.txt; every line is checked) or a path ending in .xml.
 * Returns 0, or -1 with a message naming the file, line and value. */
int sim_network_load(const char *arg, const char *file, sim_network *n, char *err, size_t errlen);
/* Writes dir/hostfile (rank0..rank<ranks-1>) and, for a named network, dir/network.xml; returns their
 * paths (malloc'ed; the platform is the user's file for one). 0 or -1. */
int sim_network_write(const sim_network *n, int ranks, const char *dir, char **platform, char **hostfile);

#define SIM_MAX_RANKS 256

/* One scaffold-sim run's outcome (with several ranks: the step time of the slowest rank, global samples/s). */
typedef struct {
  int ok;
  double step_s, samples_per_s, transfer_mib;
  long tasks;
  double busy_cpu, busy_cuda, busy_opencl; /* mean busy share of each kind's workers (-1: none) */
  char why[256];                            /* when !ok */
  int ranks, replicas, shards, nseen, batch; /* nseen: ranks whose SFSTEPS line was read */
  double *rank_step_s, *rank_busy_cpu, *rank_sent, *rank_recv; /* per rank (bytes per timed step) */
} sim_outcome;
void sim_outcome_free(sim_outcome *o);

typedef struct {
  const char *sim_bin, *config_yaml, *out_dir;
  int steps, warmup, trace;
  const sim_class *cls;
  const char *stale; /* NULL, or the class's stale report (--allow-stale): every predicted figure says so */
  int ranks;                  /* 0: one process (scaffold-sim alone); >= 1: starpu_smpirun -np ranks */
  const sim_network *net;     /* with ranks */
  const char *smpirun;        /* starpu_smpirun of the SimGrid StarPU-MPI build */
  char *const *sets;          /* extra --set KEY=VALUE for every run (a scaling point's batch), NULL-ended */
} sim_plan;

#define SIM_STALE_MARK " [STALE perfmodels: calibrated for other kernels]"

/* Runs scaffold-sim once (its own copy of the class, environment set before it starts), output and log
 * in out_dir/<sched>_<ncpu>-<ncuda>-<nopencl>/. echo != 0 copies its report to stdout. */
void sim_run_one(const sim_plan *p, const char *sched, const sim_mix *m, int echo, sim_outcome *o);
/* Writes study.md, study.csv, study.dat/.gp (+ study.png when gnuplot exists) into out_dir and prints the
 * markdown table. Returns the number of failed cells. */
int sim_write_study(const sim_plan *p, char **scheds, int ns, const sim_mix *mixes, int nm, sim_outcome *cells);

/* A scaling study over rank counts: weak (the config's local batch on every replica) or strong (the
 * global batch of the first point, split over each point's replicas). */
#define SIM_MAX_POINTS 16
typedef struct {
  int weak, n;
  int ranks[SIM_MAX_POINTS], local_batch[SIM_MAX_POINTS];
} sim_scaling;

/* --ranks "N[,N...]" and --scaling (NULL, "weak" or "strong") against the config's ranks per volume and local
 * batch: each count a multiple of spatial, increasing, one without --scaling; strong needs an even split of
 * the global batch. 0, or -1 with a message. */
int sim_parse_ranks(const char *list, const char *scaling, long spatial, long local_batch, sim_scaling *s, char *err,
                    size_t errlen);
/* One multi-rank run's report: step, samples/s, and per rank its step, CPU busy share, bytes sent and
 * received per step. */
void sim_print_ranks(const sim_plan *p, const sim_outcome *o, FILE *f);
/* scaling.md, scaling.csv, scaling.dat/.gp (+ scaling.png) in out_dir, the table on stdout. Returns the
 * number of failed points. */
int sim_write_scaling(const sim_plan *p, const sim_scaling *s, const sim_outcome *cells);

#endif
