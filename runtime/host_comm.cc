#include "runtime/host_comm.h"

#include <algorithm>
#include <cstring>

namespace meshplan::runtime {
namespace {

// One process: every collective is a copy (or nothing), as it is for a group of one in NCCL.
class SelfComm final : public HostComm {
 public:
  explicit SelfComm(std::string name) : name_(std::move(name)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<int> world_ranks() const override { return {0}; }
  const std::string& name() const override { return name_; }

  core::Status AllReduceSum(float*, int64_t, const char*) override { return core::Status::Ok(); }
  core::Status AllReduceMax(double*, int64_t, const char*) override { return core::Status::Ok(); }
  core::Status AllReduceSumDouble(double*, int64_t, const char*) override { return core::Status::Ok(); }
  core::Status AllGather(const float* in, int64_t n, float* out, const char*) override {
    if (in != out) std::copy(in, in + n, out);
    return core::Status::Ok();
  }
  core::Status ReduceScatterSum(const float* in, int64_t n, float* out, const char* what) override {
    return AllGather(in, n, out, what);
  }
  core::Status AllToAll(const float* in, int64_t n, float* out, const char* what) override {
    return AllGather(in, n, out, what);
  }
  core::Status Broadcast(float*, int64_t, int root, const char* what) override { return CheckRoot(root, what); }
  core::Status BroadcastBytes(void*, int64_t, int root, const char* what) override { return CheckRoot(root, what); }
  core::Status Send(const float*, int64_t, int peer, const char* what) override { return NoPeer(peer, what); }
  core::Status Recv(float*, int64_t, int peer, const char* what) override { return NoPeer(peer, what); }
  core::Status FlushSends(const char*) override { return core::Status::Ok(); }
  core::Status Barrier(const char*) override { return core::Status::Ok(); }
  core::Result<std::unique_ptr<HostComm>> Split(int, int, const std::string& name) override {
    return std::unique_ptr<HostComm>(std::make_unique<SelfComm>(name));
  }

 private:
  core::Status CheckRoot(int root, const char* what) const {
    if (root == 0) return core::Status::Ok();
    return core::Status::InvalidArgument(std::string(what) + ": root " + std::to_string(root) + " is not in group " +
                                         name_ + " of size 1");
  }
  core::Status NoPeer(int peer, const char* what) const {
    return core::Status::InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                                         " does not exist in group " + name_ + " of size 1");
  }
  std::string name_;
};

}  // namespace

std::unique_ptr<HostComm> MakeSelfComm(const std::string& name) { return std::make_unique<SelfComm>(name); }

}  // namespace meshplan::runtime
