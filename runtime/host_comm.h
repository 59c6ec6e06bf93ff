// HostComm: a group of processes exchanging host memory (fp32 values and raw bytes). The cpu
// backend's collectives run on one; the cuda backend uses one to broadcast NCCL's unique id.
// Implementations: SelfComm (one process; always built) and MpiComm (runtime/mpi/, built when
// MPI is found). Every call is blocking; a call that waits on peers longer than the group's
// watchdog timeout aborts the whole job (MPI_Abort) after printing one line naming this rank, the
// op (`what`) and the ranks that never arrived (see runtime/mpi/mpi_comm.h).
//
// Semantics follow NCCL/MPI with sum reductions: AllGather writes size() blocks of n values
// (block i from rank i); ReduceScatter reads size() blocks of n and writes this rank's summed
// block; AllToAll sends block j of `in` (n values) to rank j, receiving block i from rank i.
// Send is buffered: it returns once the values are copied, before the peer receives them;
// FlushSends() waits for every send of this communicator to be delivered.
// Thread-safety: not thread-safe; one thread per HostComm.
#ifndef MESHPLAN_RUNTIME_HOST_COMM_H_
#define MESHPLAN_RUNTIME_HOST_COMM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace meshplan::runtime {

class HostComm {
 public:
  virtual ~HostComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The members' ranks in the world communicator, in group rank order.
  virtual std::vector<int> world_ranks() const = 0;
  // A name for messages: "tp", "world".
  virtual const std::string& name() const = 0;

  virtual core::Status AllReduceSum(float* data, int64_t n, const char* what) = 0;
  virtual core::Status AllReduceMax(double* data, int64_t n, const char* what) = 0;
  virtual core::Status AllReduceSumDouble(double* data, int64_t n, const char* what) = 0;
  virtual core::Status AllGather(const float* in, int64_t n, float* out, const char* what) = 0;
  virtual core::Status ReduceScatterSum(const float* in, int64_t n, float* out, const char* what) = 0;
  virtual core::Status AllToAll(const float* in, int64_t n, float* out, const char* what) = 0;
  virtual core::Status Broadcast(float* data, int64_t n, int root, const char* what) = 0;
  virtual core::Status BroadcastBytes(void* data, int64_t bytes, int root, const char* what) = 0;
  virtual core::Status Send(const float* data, int64_t n, int peer, const char* what) = 0;
  virtual core::Status Recv(float* data, int64_t n, int peer, const char* what) = 0;
  virtual core::Status FlushSends(const char* what) = 0;
  virtual core::Status Barrier(const char* what) = 0;
  // The sub-group of the ranks passing the same `color`, ordered by `key` (MPI_Comm_split).
  // Collective over this group. `name` names the new group in messages.
  virtual core::Result<std::unique_ptr<HostComm>> Split(int color, int key, const std::string& name) = 0;
};

// The group of this process alone: collectives copy, Send/Recv are InvalidArgument (there is no
// peer). Always available.
std::unique_ptr<HostComm> MakeSelfComm(const std::string& name = "self");

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_HOST_COMM_H_
