// The cuda backend: runtime/backend.h on one NVIDIA GPU (OpenMM's CUDA platform beside the cpu
// Reference platform; runtime/cpu/cpu_backend.h defines every op's semantics). Built when CMake
// finds the CUDA toolkit and NCCL (MESHPLAN_HAVE_CUDA); this header includes no CUDA header.
//
// What runs where:
//   memory       cudaMalloc/cudaFree per tensor; MemoryStats count the tensors' bytes in their
//                dtype (bf16 = 2 bytes per element). Scratch the backend keeps for itself (host
//                copy staging, attention/norm backward partials, fp8 transposes, a 32 MiB
//                cuBLASLt workspace) is not counted.
//   dtypes       stored as themselves: fp32, bf16, fp16, fp8 (e4m3); tf32 is stored as fp32 and
//                only changes how GEMMs compute. int8 is Unavailable. Host copies convert from/to
//                the host's fp32 arrays on the device, rounding to nearest even.
//   gemm         cuBLAS (cublasGemmStridedBatchedEx) with fp32 accumulation for fp32, tf32
//                (CUBLAS_COMPUTE_32F_FAST_TF32), bf16 and fp16, reduced-precision split-K
//                reductions disallowed; row-major C = op(A) op(B) is run as the column-major
//                C^T = op(B)^T op(A)^T. fp8 (e4m3 in, e4m3 out, fp32 accumulate) runs on
//                cuBLASLt on sm_89 and newer (Unavailable before); it needs beta = 0 and m, n, k
//                multiples of 16 (InvalidArgument otherwise), and on sm_89/sm_90, where cuBLASLt's
//                fp8 kernels take only the "TN" layout, an operand in the other layout is first
//                transposed into scratch by a kernel on the same stream (so its time is part of
//                the GEMM's).
//   other ops    runtime/cuda/kernels.cu: straightforward kernels with fp32 math and one rounding
//                per stored value (attention: one block per query row, online softmax).
//   collectives  NCCL. CreateCommunicator: rank 0 of the group calls ncclGetUniqueId, the id's
//                bytes are broadcast over the group's HostComm, every member calls
//                ncclCommInitRank (blocking until all members arrive; the HostComm watchdog covers
//                the broadcast, not this call). A group of one needs no NCCL: its collectives are
//                device copies (or nothing), and Send/Recv are InvalidArgument, as on cpu.
//   timing       RecordEvent = cudaEventRecord on the compute stream (events are pooled and
//                reused after ReleaseEvents); ElapsedSeconds = cudaEventElapsedTime.
//
// Streams and synchronisation (the contract the executor and the benchmarks rely on):
//   * Every call is issued on one compute stream, in call order, and returns without waiting for
//     the GPU, except CopyFromHost/CopyToHost (which wait for their copy, so host buffers may be
//     reused at once and copied-out values are final) and Synchronize().
//   * Collectives run on a separate, high-priority communication stream, joined both ways with
//     events: the communication stream waits for everything issued before the call, and the
//     compute stream waits for the collective before anything issued after it. So in stream
//     order every collective sits exactly where it was called: events recorded around it time it,
//     and its output is ready for the next op. (The second stream keeps NCCL's kernels apart from
//     the compute work so that overlapping them later only means dropping a join.)
//   * Send is deferred: it records the tensor and returns. The pending sends of a communicator
//     are issued together with its next Recv in one NCCL group (ncclGroupStart/End), or by
//     FlushSends. That is what lets a ring (every rank sends, then receives) and 1F1B's
//     send-forward/receive-backward pattern make progress: NCCL sends block until the peer
//     receives, so issued alone they deadlock. REQUIRES: a sent tensor is not written until the
//     communicator's next Recv or FlushSends (its handle is kept alive until then). An event
//     around Send therefore times nothing; the Recv that issues it times both.
//   * FlushSends issues this rank's pending sends; later calls run after they complete (stream
//     order), and Synchronize() waits for them. Synchronize does not issue pending sends.
//   * Collectives on one communicator must be called in the same order on every member (NCCL's
//     rule); a communicator's collective issues its pending sends first.
//   * Tensors free their memory with cudaFree, which waits for the device, so a tensor may be
//     dropped while kernels that use it are still queued.
// Device: the ordinal in CudaBackendOptions, else $MESHPLAN_CUDA_DEVICE, else the node-local
// rank from the MPI launcher or Slurm (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
// MV2_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, LOCAL_RANK) modulo the visible devices, else 0.
// Errors: CUDA, cuBLAS and NCCL codes become Status through runtime/cuda/cuda_check.h (the
// expression, file, line and the library's error string); shape and dtype errors are
// InvalidArgument naming the op, as on cpu.
// Thread-safety: not thread-safe; one CudaBackend per thread. It makes its device current when it
// is created; a thread that switches devices must switch back before calling it.
#ifndef MESHPLAN_RUNTIME_CUDA_CUDA_BACKEND_H_
#define MESHPLAN_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <memory>

#include "core/status.h"
#include "runtime/backend.h"

namespace meshplan::runtime::cuda {

struct CudaBackendOptions {
  int device = -1;  // CUDA ordinal; -1: $MESHPLAN_CUDA_DEVICE, else the local rank, else 0
};

// A cuda backend on the chosen device. Unavailable, in one line starting "cuda backend: ", when
// no device can be used (the CUDA error from device detection) or the ordinal does not exist;
// the CUDA/cuBLAS Status if creating streams, handles or the workspace fails.
core::Result<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options = {});

}  // namespace meshplan::runtime::cuda

#endif  // MESHPLAN_RUNTIME_CUDA_CUDA_BACKEND_H_
