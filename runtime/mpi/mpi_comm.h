// MPI implementation of HostComm (runtime/host_comm.h), built when CMake finds MPI
// (MESHPLAN_HAVE_MPI). Every call is issued non-blocking and then polled against a deadline:
// the collective watchdog. If a call has not completed after `watchdog_timeout_s`, this rank
// prints one line on stderr naming itself, the op, the group and the ranks that never arrived,
// and calls MPI_Abort, which ends every rank of the job: a dead or hung rank never turns into a
// silent hang.
//
// To name the ranks that never arrived, each collective (with `arrival_tokens` on) also sends a
// small token to every other member and receives theirs; a missing token names a missing rank.
// That costs 2(n-1) tiny messages per collective and makes each collective synchronising, so
// microbenchmarks turn it off (the watchdog then names the group instead).
// No MPI header is included here. Thread-safety: MPI is initialised with MPI_THREAD_FUNNELED;
// call from the main thread only.
#ifndef MESHPLAN_RUNTIME_MPI_MPI_COMM_H_
#define MESHPLAN_RUNTIME_MPI_MPI_COMM_H_

#include <memory>

#include "core/status.h"
#include "runtime/host_comm.h"

namespace meshplan::runtime {

struct MpiOptions {
  double watchdog_timeout_s = 120;
  bool arrival_tokens = true;
};

// True when the environment says this process was started by mpirun/mpiexec (Open MPI, MPICH
// or a PMI/PMIx launcher); a plain launch then runs single-process without touching MPI.
bool LaunchedByMpiLauncher();

// MPI_Init_thread and the world communicator. Call once per process; FinalizeMpi() at exit.
core::Result<std::unique_ptr<HostComm>> InitMpi(int* argc, char*** argv, const MpiOptions& options);
void FinalizeMpi();

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_MPI_MPI_COMM_H_
