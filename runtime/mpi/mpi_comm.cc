#include "runtime/mpi/mpi_comm.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <string>
#include <thread>
#include <vector>

namespace meshplan::runtime {

using core::Result;
using core::Status;

bool LaunchedByMpiLauncher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string MpiError(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

#define MESHPLAN_RETURN_IF_MPI_ERROR(expr)                                         \
  do {                                                                             \
    const int meshplan_mpi_rc_ = (expr);                                           \
    if (meshplan_mpi_rc_ != MPI_SUCCESS)                                           \
      return Status::Internal(MpiError(meshplan_mpi_rc_) + " from " #expr " at " + \
                              ::meshplan::core::SourcePlace(__FILE__, __LINE__));  \
  } while (0)

#define MESHPLAN_RETURN_IF_ERROR_COUNT(n, what)                                              \
  do {                                                                                       \
    if ((n) > INT_MAX)                                                                       \
      return Status::InvalidArgument(std::string(what) + ": " + std::to_string(n) +          \
                                     " elements exceed MPI's int count (split the buffer)"); \
  } while (0)

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(ranks[i]);
  }
  return s;
}

class MpiComm final : public HostComm {
 public:
  MpiComm(MPI_Comm comm, std::string name, const MpiOptions& o) : comm_(comm), name_(std::move(name)), o_(o) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_dup(comm_, &tokens_);
    // World ranks of the members, for messages.
    MPI_Group g, w;
    MPI_Comm_group(comm_, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    std::vector<int> mine(static_cast<size_t>(size_));
    for (int i = 0; i < size_; ++i) mine[static_cast<size_t>(i)] = i;
    world_.resize(static_cast<size_t>(size_));
    MPI_Group_translate_ranks(g, size_, mine.data(), w, world_.data());
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  }
  ~MpiComm() override {
    // Outstanding buffered sends must finish before their buffers go.
    (void)FlushSends("communicator teardown");
    MPI_Comm_free(&tokens_);
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<int> world_ranks() const override { return world_; }
  const std::string& name() const override { return name_; }

  Status AllReduceSum(float* data, int64_t n, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_, r);
    });
  }
  Status AllReduceMax(double* data, int64_t n, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, comm_, r);
    });
  }
  Status AllReduceSumDouble(double* data, int64_t n, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_, r);
    });
  }
  Status AllGather(const float* in, int64_t n, float* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n * size_, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Iallgather(in, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, comm_, r);
    });
  }
  Status ReduceScatterSum(const float* in, int64_t n, float* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n * size_, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_, r);
    });
  }
  Status AllToAll(const float* in, int64_t n, float* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n * size_, what);
    return Collective(what, [&](MPI_Request* r) {
      return MPI_Ialltoall(in, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, comm_, r);
    });
  }
  Status Broadcast(float* data, int64_t n, int root, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    if (root < 0 || root >= size_) return BadPeer(root, what);
    return Collective(what,
                      [&](MPI_Request* r) { return MPI_Ibcast(data, static_cast<int>(n), MPI_FLOAT, root, comm_, r); });
  }
  Status BroadcastBytes(void* data, int64_t bytes, int root, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(bytes, what);
    if (root < 0 || root >= size_) return BadPeer(root, what);
    return Collective(
        what, [&](MPI_Request* r) { return MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, r); });
  }
  Status Barrier(const char* what) override {
    return Collective(what, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }

  Status Send(const float* data, int64_t n, int peer, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    if (peer < 0 || peer >= size_ || peer == rank_) return BadPeer(peer, what);
    // Buffered: the values are copied, so the caller may reuse its buffer at once and a send
    // never blocks (1F1B's crossing sends cannot deadlock).
    Prune();
    sends_.push_back({MPI_REQUEST_NULL, std::vector<float>(data, data + n), peer, what});
    PendingSend& s = sends_.back();
    MESHPLAN_RETURN_IF_MPI_ERROR(
        MPI_Isend(s.buffer.data(), static_cast<int>(n), MPI_FLOAT, peer, kDataTag, comm_, &s.request));
    return Status::Ok();
  }
  Status Recv(float* data, int64_t n, int peer, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR_COUNT(n, what);
    if (peer < 0 || peer >= size_ || peer == rank_) return BadPeer(peer, what);
    MPI_Request r;
    MESHPLAN_RETURN_IF_MPI_ERROR(MPI_Irecv(data, static_cast<int>(n), MPI_FLOAT, peer, kDataTag, comm_, &r));
    if (!WaitUntil(&r, 1)) Abort(what, "recv", {world_[static_cast<size_t>(peer)]});
    return Status::Ok();
  }
  Status FlushSends(const char* what) override {
    for (PendingSend& s : sends_) {
      if (!WaitUntil(&s.request, 1)) Abort(what, "send (flush)", {world_[static_cast<size_t>(s.peer)]});
    }
    sends_.clear();
    return Status::Ok();
  }

  Result<std::unique_ptr<HostComm>> Split(int color, int key, const std::string& name) override {
    MPI_Comm out;
    MESHPLAN_RETURN_IF_MPI_ERROR(MPI_Comm_split(comm_, color, key, &out));
    return std::unique_ptr<HostComm>(std::make_unique<MpiComm>(out, name, o_));
  }

 private:
  static constexpr int kDataTag = 1;
  struct PendingSend {
    MPI_Request request;
    std::vector<float> buffer;
    int peer;
    const char* what;
  };

  Status BadPeer(int peer, const char* what) const {
    return Status::InvalidArgument(std::string(what) + ": rank " + std::to_string(peer) + " is not a peer in group " +
                                   name_ + " of size " + std::to_string(size_));
  }

  void Prune() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? sends_.erase(it) : std::next(it);
    }
  }

  // Polls the requests until all complete (true) or the watchdog deadline passes (false). Spins
  // (yielding the core, for oversubscribed runs) for the first 5 ms, then sleeps with growing
  // pauses up to 1 ms, so a long wait costs no core and a short one no latency.
  bool WaitUntil(MPI_Request* reqs, int n) {
    const double start = Now(), deadline = start + o_.watchdog_timeout_s;
    auto pause = std::chrono::microseconds(20);
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
      if (done) return true;
      if (polls % 64 != 63) {
        std::this_thread::yield();
        continue;
      }
      const double now = Now();
      if (now > deadline) return false;
      if (now - start > 5e-3) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  }

  // Starts the collective (and the arrival tokens), waits under the watchdog.
  template <typename Start>
  Status Collective(const char* what, Start start) {
    ++seq_;
    std::vector<MPI_Request> reqs(1, MPI_REQUEST_NULL);
    std::vector<int64_t> in_tokens(static_cast<size_t>(size_), 0);
    std::vector<int> token_peers;
    const bool tokens = o_.arrival_tokens && size_ > 1;
    if (tokens) {
      const int tag = static_cast<int>(seq_ % 30000);
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        reqs.push_back(MPI_REQUEST_NULL);
        MESHPLAN_RETURN_IF_MPI_ERROR(
            MPI_Irecv(&in_tokens[static_cast<size_t>(p)], 1, MPI_INT64_T, p, tag, tokens_, &reqs.back()));
        token_peers.push_back(p);
      }
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        reqs.push_back(MPI_REQUEST_NULL);
        MESHPLAN_RETURN_IF_MPI_ERROR(MPI_Isend(&seq_, 1, MPI_INT64_T, p, tag, tokens_, &reqs.back()));
      }
    }
    MESHPLAN_RETURN_IF_MPI_ERROR(start(&reqs[0]));
    if (WaitUntil(reqs.data(), static_cast<int>(reqs.size()))) return Status::Ok();
    // Which members never sent their token for this op?
    std::vector<int> missing;
    for (size_t i = 0; i < token_peers.size(); ++i) {
      int done = 0;
      MPI_Test(&reqs[1 + i], &done, MPI_STATUS_IGNORE);
      if (!done) missing.push_back(world_[static_cast<size_t>(token_peers[i])]);
    }
    Abort(what, "collective", missing);
    return Status::Internal("unreachable");
  }

  [[noreturn]] void Abort(const char* what, const char* call, const std::vector<int>& missing) {
    std::string line = "meshplan-run: watchdog: rank " + std::to_string(world_rank_) + " waited " +
                       std::to_string(static_cast<int>(o_.watchdog_timeout_s)) + " s in " + call + " '" + what +
                       "' on group " + name_ + " (world ranks " + RankList(world_) + "); ";
    if (!missing.empty()) {
      line += (missing.size() == 1 ? "rank " : "ranks ") + RankList(missing) + " never arrived" + " (dead or hung)";
    } else {
      line += "a peer in the group is dead or hung";
    }
    line += "; aborting the job\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
  }

  MPI_Comm comm_;
  MPI_Comm tokens_ = MPI_COMM_NULL;
  std::string name_;
  MpiOptions o_;
  int rank_ = 0, size_ = 1, world_rank_ = 0;
  std::vector<int> world_;
  int64_t seq_ = 0;
  std::list<PendingSend> sends_;  // stable addresses for the in-flight buffers
};

}  // namespace

Result<std::unique_ptr<HostComm>> InitMpi(int* argc, char*** argv, const MpiOptions& options) {
  int provided = 0;
  MESHPLAN_RETURN_IF_MPI_ERROR(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  // Errors come back as codes (MPI_ERRORS_RETURN), so they become a Status, not an abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::unique_ptr<HostComm>(std::make_unique<MpiComm>(MPI_COMM_WORLD, "world", options));
}

void FinalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace meshplan::runtime
