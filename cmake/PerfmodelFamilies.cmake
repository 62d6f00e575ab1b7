# The perfmodel families: which codelets share one identity, and which source files that identity is the
# hash of (docs/perfmodels.md, "The identity of a perfmodel"). The one table of it: read by
# cmake/PerfmodelIds.cmake, which writes <build>/generated/sf_perfmodel_ids.h at every build; the
# SF_CODELET macro (codelets/codelet_common.h) appends the family's identity to every perfmodel symbol.
#
# A family is one codelet glue file (codelets/<family>.c, docs/architecture.md §1.2) with the kernels
# its tasks run: CPU (src/kernels/<dir>/), CUDA (codelets/cuda_glue, src/kernels/cuda) and OpenCL
# (codelets/opencl). A codelet missing from SF_PM_<family>_CODELETS stops the build (SF_PMID_<op> is
# undefined). Patterns are relative to the source root: a file, a glob (`*`, one folder) or `dir/**`
# (every file under dir). A pattern that matches no file stops the script, so a renamed file cannot drop
# out of its family's hash silently. Listing too much only costs a recalibration; listing too little
# lets a stale model pass as current, so when unsure, list it.
#
# SF_PM_SHARED is in every family's hash: what every codelet compiles in (codelet_common.h, the
# argument structs), the kernels' common helpers (src/kernels/common: ISA detection, bf16, workspaces,
# streaming stores) and the GPU glue every CUDA / OpenCL codelet shares.
set(SF_PM_SHARED
  codelets/codelet_common.h
  include/scaffold/codelet_args.h
  src/kernels/common/**
  codelets/cuda_glue/cuda_glue.h
  codelets/cuda_glue/glue_cuda.c
  src/kernels/cuda/gpu_common.h
  src/kernels/cuda/gpu_runtime.cu
  codelets/opencl/launch_common.c
  codelets/opencl/ocl_internal.h)

set(SF_PM_FAMILIES concat conv1 conv3d dice grad_combine groupnorm halo_blocks halo_plane loss maxpool3d optim
                   reduce sample upconv3d)

set(SF_PM_concat_CODELETS concat_fwd concat_bwd)
set(SF_PM_concat_SOURCES codelets/concat.c src/kernels/elementwise/concat.c codelets/cuda_glue/concat_cuda.c
  src/kernels/cuda/elementwise.cu codelets/opencl/elementwise.cl codelets/opencl/launch_elem.c)

set(SF_PM_conv1_CODELETS conv1_fwd conv1_bwd_data conv1_bwd_weights)
set(SF_PM_conv1_SOURCES codelets/conv1.c src/kernels/conv1/** src/kernels/gemm/** codelets/cuda_glue/conv1_cuda.c
  src/kernels/cuda/conv1.cu src/kernels/cuda/gpu_gemm.cu src/kernels/cuda/gpu_blas.h codelets/opencl/conv1.cl
  codelets/opencl/launch_conv.c)

set(SF_PM_conv3d_CODELETS conv3d_fwd conv3d_bwd_data conv3d_bwd_weights conv3d_bwd_weights_taps conv3d_fwd_bf16
  conv3d_bwd_data_bf16 conv3d_bwd_weights_bf16 conv3d_bwd_weights_taps_bf16 conv3d_pack_bf16)
set(SF_PM_conv3d_SOURCES codelets/conv3d.c codelets/conv3d_halos.h src/kernels/conv3d/** src/kernels/gemm/**
  codelets/cuda_glue/conv3d_cuda.c src/kernels/cuda/conv3d_*.cu src/kernels/cuda/gpu_gemm.cu
  src/kernels/cuda/gpu_blas.h codelets/opencl/conv3d.cl codelets/opencl/launch_conv.c)

set(SF_PM_dice_CODELETS dice_hard_partial)
set(SF_PM_dice_SOURCES codelets/dice.c src/kernels/loss/dice.c codelets/cuda_glue/dice_cuda.c src/kernels/cuda/loss.cu
  src/kernels/cuda/elementwise.cu codelets/opencl/loss.cl codelets/opencl/launch_elem.c)

set(SF_PM_grad_combine_CODELETS grad_combine)
set(SF_PM_grad_combine_SOURCES codelets/grad_combine.c)

set(SF_PM_groupnorm_CODELETS groupnorm_stats groupnorm_fwd groupnorm_bwd_stats groupnorm_bwd_reduce groupnorm_bwd_data)
set(SF_PM_groupnorm_SOURCES codelets/groupnorm.c src/kernels/groupnorm/** codelets/cuda_glue/groupnorm_cuda.c
  src/kernels/cuda/groupnorm.cu codelets/opencl/groupnorm.cl codelets/opencl/launch_groupnorm.c)

set(SF_PM_halo_blocks_CODELETS box_copy layer_copy pad_cols pad_rows crop_hw embed_hw)
set(SF_PM_halo_blocks_SOURCES codelets/halo_blocks.c codelets/halo_blocks_moves.h src/kernels/halo/**
  codelets/cuda_glue/blocks_cuda.c codelets/opencl/launch_blocks.c)

set(SF_PM_halo_plane_CODELETS plane_copy)
set(SF_PM_halo_plane_SOURCES codelets/halo_plane.c)

set(SF_PM_loss_CODELETS loss_partial loss_bwd loss_wsum)
set(SF_PM_loss_SOURCES codelets/loss.c src/kernels/loss/loss.c src/kernels/loss/loss_ref.c codelets/cuda_glue/loss_cuda.c
  src/kernels/cuda/loss.cu codelets/opencl/loss.cl codelets/opencl/launch_elem.c)

set(SF_PM_maxpool3d_CODELETS maxpool3d_fwd maxpool3d_bwd)
set(SF_PM_maxpool3d_SOURCES codelets/maxpool3d.c src/kernels/maxpool3d/** codelets/cuda_glue/maxpool3d_cuda.c
  src/kernels/cuda/elementwise.cu codelets/opencl/elementwise.cl codelets/opencl/launch_elem.c)

set(SF_PM_optim_CODELETS sumsq clip_coef adam sgd rmsprop)
set(SF_PM_optim_SOURCES codelets/optim.c src/kernels/elementwise/optim.c codelets/cuda_glue/optim_cuda.c
  src/kernels/cuda/optim.cu codelets/opencl/optim.cl codelets/opencl/launch_optim.c)

set(SF_PM_reduce_CODELETS sum_f sum_d zero)
set(SF_PM_reduce_SOURCES codelets/reduce.c codelets/cuda_glue/reduce_cuda.c codelets/opencl/reduce.cl
  codelets/opencl/launch_optim.c)

set(SF_PM_sample_CODELETS sample_load sample_load_box)
set(SF_PM_sample_SOURCES codelets/sample.c codelets/cuda_glue/sample_cuda.c src/kernels/cuda/loss.cu
  codelets/opencl/elementwise.cl codelets/opencl/loss.cl codelets/opencl/launch_optim.c)

set(SF_PM_upconv3d_CODELETS upconv3d_fwd upconv3d_bwd_data upconv3d_bwd_weights upconv3d_fwd_bf16
  upconv3d_bwd_data_bf16 upconv3d_bwd_weights_bf16)
set(SF_PM_upconv3d_SOURCES codelets/upconv3d.c src/kernels/upconv3d/** src/kernels/gemm/**
  codelets/cuda_glue/upconv3d_cuda.c src/kernels/cuda/upconv3d.cu src/kernels/cuda/gpu_gemm.cu
  src/kernels/cuda/gpu_blas.h codelets/opencl/upconv3d.cl codelets/opencl/launch_conv.c)
