# The layer map: which directories and public headers make up each layer, and which layers' public
# headers each may include. Read by the build-time checks (cmake/LayerCheck.cmake: includes,
# cmake/LayerSymbols.cmake: calls between the layer libraries) and by the top-level CMakeLists.txt,
# which builds one static library per layer (sf_<layer>).
#
# From the bottom up:
#   util      src/util           common helpers, files, RNG, npy, sha256, signals, shell quoting,
#                                rate slices
#   config    src/config         the configuration: keys, YAML, CLI overrides
#   kernels   src/kernels        plain kernels: no StarPU; one folder per op family (conv3d/, conv1/, upconv3d/,
#                                gemm/, groupnorm/, loss/, maxpool3d/, elementwise/, halo/), common/ (kernel-set detection,
#                                bf16, workspace), cuda/ (the CUDA kernels built by cmake/Cuda.cmake)
#   runtime   src/runtime        the task runtime interface and its backends (runtime: starpu | openmp |
#                                sequential): StarPU / StarPU-MPI start-up and shut-down, layout queries,
#                                data registration and requests, host collectives, trace, perfmodels,
#                                OpenCL device start-up (programs, placement), CUDA start-up; the host
#                                executors (OpenMP tasks, sequential)
#   codelets  codelets/*.c,      StarPU glue: one codelet per op, the insert_task_* helpers, the OpenCL
#             codelets/opencl,   launchers and CUDA wrappers
#             codelets/cuda_glue
#   comm      src/comm           graph-level communication: the gradient all-reduce, the halo exchange
#   model     src/model          the U-Net's topology, parameter arena and initialisation (no StarPU)
#   datagen   src/datagen        fractal and dataset generation (StarPU task farms), the dataset loader
#   train     src/train          the training-step task graph, the trainer, checkpoints, outputs
#   sim       src/sim            timed steps on synthetic samples: `scaffold steps` and, against a SimGrid
#                                StarPU, `scaffold-sim` (docs/simulation.md)
#   harness   src/bench          the milabench-style harness: options, results, reports
#   cli       src/cli            the subcommands (the `scaffold` executable is src/cli/main.c)
#
# A file may include the public headers (include/scaffold/<name>.h) of the layers listed in its
# layer's _USES (which always lists the layer itself), and the private headers (any other .h) of its
# own layer only. Only layers with _STARPU ON may include StarPU, StarPU-MPI or MPI headers
# (<starpu*.h>, <mpi.h>). A new public header must be added to one layer's _HEADERS, or the check
# stops the build naming it.

set(SF_LAYERS util config kernels runtime codelets comm model datagen train sim harness cli)

set(SF_LAYER_util_DIRS src/util)
set(SF_LAYER_util_HEADERS common fsutil npy rng sha256 signals shell ratelog switches json progress)
set(SF_LAYER_util_USES util)
set(SF_LAYER_util_STARPU OFF)

set(SF_LAYER_config_DIRS src/config)
set(SF_LAYER_config_HEADERS config)
set(SF_LAYER_config_USES config util)
set(SF_LAYER_config_STARPU OFF)

set(SF_LAYER_kernels_DIRS src/kernels)
set(SF_LAYER_kernels_HEADERS ops workspace ops_cuda gpu_vendor cpu_isa kernel_choices kernel_tuning)
set(SF_LAYER_kernels_USES kernels util)
set(SF_LAYER_kernels_STARPU OFF)

# runtime -> kernels: runtime_cuda.c releases the CUDA kernels' per-thread workspaces (ops_cuda.h), and the
# trace statistics name the kernel variants each entry ran (kernel_choices.h, counted by the kernels).
set(SF_LAYER_runtime_DIRS src/runtime)
set(SF_LAYER_runtime_HEADERS runtime runtime_cuda dist tensor trace perfmodels machine_class kernel_tuning_setup opencl_devices host_exec bound graph_record)
set(SF_LAYER_runtime_USES runtime config kernels util)
set(SF_LAYER_runtime_STARPU ON)

set(SF_LAYER_codelets_DIRS codelets)
set(SF_LAYER_codelets_HEADERS tasks opencl codelets_cuda codelet_args)
set(SF_LAYER_codelets_USES codelets runtime kernels util)
set(SF_LAYER_codelets_STARPU ON)

set(SF_LAYER_comm_DIRS src/comm)
set(SF_LAYER_comm_HEADERS comm)
set(SF_LAYER_comm_USES comm codelets runtime util)
set(SF_LAYER_comm_STARPU OFF)

set(SF_LAYER_model_DIRS src/model)
set(SF_LAYER_model_HEADERS model)
set(SF_LAYER_model_USES model util)
set(SF_LAYER_model_STARPU OFF)

set(SF_LAYER_datagen_DIRS src/datagen)
set(SF_LAYER_datagen_HEADERS datagen dataset mt19937)
set(SF_LAYER_datagen_USES datagen runtime config util)
set(SF_LAYER_datagen_STARPU ON)

# train -> kernels: host-side arithmetic on reduced scalars after a step's wait (graph_step.c:
# sf_loss_finalize_batch, sf_dice_hard_finalize) and the kernels' constants (SF_CLIP_MAX_NORM, Adam's
# betas). The optimizer itself runs as tasks only. No StarPU: the graph and the trainer call the
# insert-task helpers and the runtime's wrappers (sf_runtime_*, sf_tensor_*, sf_dist_*).
set(SF_LAYER_train_DIRS src/train)
set(SF_LAYER_train_HEADERS graph trainer lr_schedule memory_plan scale_model)
set(SF_LAYER_train_USES train comm codelets model datagen runtime config kernels util)
set(SF_LAYER_train_STARPU OFF)

set(SF_LAYER_sim_DIRS src/sim)
set(SF_LAYER_sim_HEADERS steps)
# sim -> kernels: the report names the CPU kernel variants the timed steps ran (kernel_choices.h) only.
set(SF_LAYER_sim_USES sim train codelets model runtime config kernels util)
set(SF_LAYER_sim_STARPU OFF)

# harness -> StarPU: machine.c reads the StarPU version from <starpu_config.h> for the machine record.
set(SF_LAYER_harness_DIRS src/bench)
set(SF_LAYER_harness_HEADERS bench)
set(SF_LAYER_harness_USES harness util)
set(SF_LAYER_harness_STARPU ON)

set(SF_LAYER_cli_DIRS src/cli)
set(SF_LAYER_cli_HEADERS cli)
set(SF_LAYER_cli_USES cli harness sim train datagen model comm codelets runtime kernels config util)
set(SF_LAYER_cli_STARPU OFF)
