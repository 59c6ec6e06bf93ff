// meshplan export --check (cli/export_check.h): the framework's own validation, run by a small
// Python checker in the user's interpreter.
#include "cli/export_check.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace meshplan::cli {
namespace {

// Shared by the three checkers: argv is `export world_size dp arch` (arch: the plan's GPU's
// compute capability major, 0 when unknown). The checker prints one line and
// exits 0 (accepted), 1 (rejected: the framework raised an assertion, an argument, a value or a
// key error, or an attribute error: a field its slotted config classes do not have) or 3 (no verdict: Python or the
// framework could not be imported, or it stopped for another reason). The framework's own printing is captured, so that
// an argument parser's error line can be quoted.
constexpr const char* kPrelude = R"PY(import contextlib, importlib, io, os, sys
path, world, dp, arch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def done(code, msg):
    print(msg)
    sys.stdout.flush()
    os._exit(code)

def need(module):
    try:
        return importlib.import_module(module)
    except BaseException as e:
        done(3, "cannot import %s (%s: %s)" % (module, type(e).__name__, e))

def version(module):
    try:
        return importlib.import_module(module).__version__
    except BaseException:
        pass
    try:
        from importlib import metadata
        return metadata.version(module.split(".")[0])
    except BaseException:
        return "of unknown version"

def verdict(fn, what):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            fn()
    except SystemExit as e:
        lines = [l for l in buf.getvalue().splitlines() if l.strip()]
        done(1, "%s: %s" % (what, lines[-1] if lines else "exited with %s" % e.code))
    except (AssertionError, ValueError, KeyError, AttributeError) as e:
        done(1, "%s: %s: %s" % (what, type(e).__name__, e))
    except BaseException as e:
        done(3, "%s stopped without a verdict on the export (%s: %s)" % (what, type(e).__name__, e))
)PY";

// Megatron-LM: the environment lines are exported, the launcher's arguments after
// pretrain_gpt.py become sys.argv, and parse_args then validate_args run as pretrain() runs them
// (megatron/training/initialize.py initialize_megatron), with WORLD_SIZE the plan's GPUs. Where
// validate_args asks the GPU for its architecture (get_device_arch_version, and
// torch.cuda.get_device_capability for grouped GEMMs), the plan's GPU answers: no GPU is needed.
constexpr const char* kMegatron = R"PY(import shlex
words = []
for line in open(path).read().splitlines():
    if not line.strip() or line.startswith("#"):
        continue
    if line.startswith("export "):
        key, _, value = line[len("export "):].partition("=")
        os.environ[key.strip()] = value.strip()
        continue
    words.append(line.rstrip().rstrip("\\"))
words = shlex.split(" ".join(words))
if "pretrain_gpt.py" not in words:
    done(3, "the export has no pretrain_gpt.py launcher line")
os.environ.update(WORLD_SIZE=str(world), RANK="0", LOCAL_RANK="0")
arguments = need("megatron.training.arguments")
sys.argv = ["pretrain_gpt.py"] + words[words.index("pretrain_gpt.py") + 1:]
if arch > 0:
    arguments.get_device_arch_version = lambda: arch
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.cuda.get_device_capability = lambda *args, **kwargs: (arch, 0)
what = "Megatron-LM (megatron.core %s)" % version("megatron.core.package_info")

def run():
    args = arguments.parse_args()
    arguments.validate_args(args, {})

verdict(run, what)
done(0, what + ": parse_args and validate_args accept the arguments")
)PY";

// DeepSpeed: DeepSpeedConfig with an mpu whose data-parallel size is the plan's, as
// Megatron-DeepSpeed passes it (deepspeed/runtime/config.py DeepSpeedConfig.__init__), after a
// one-rank gloo process group (its get_rank needs one).
constexpr const char* kDeepSpeed = R"PY(import socket
deepspeed = need("deepspeed")
config = need("deepspeed.runtime.config")
what = "DeepSpeed %s" % version("deepspeed")

class Mpu:
    def get_data_parallel_world_size(self):
        return dp

def init():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False,
                               init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)

try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        init()
except BaseException as e:
    done(3, "%s: a one-rank gloo process group could not start (%s: %s)" % (what, type(e).__name__, e))
verdict(lambda: config.DeepSpeedConfig(path, mpu=Mpu()), what)
done(0, what + ": DeepSpeedConfig accepts the configuration (data-parallel size %d)" % dp)
)PY";

// torchtitan: its ConfigManager reads the TOML (unknown keys and bad values raise), then the
// trainer's ParallelDims check over the plan's GPUs and the [model] section's train spec and
// flavor (torchtitan/train.py at 238fa99).
constexpr const char* kTorchtitan = R"PY(config = need("torchtitan.config")
distributed = need("torchtitan.distributed")
train_spec = need("torchtitan.protocols.train_spec")
what = "torchtitan %s" % version("torchtitan")

def run():
    c = config.ConfigManager().parse_args(["--job.config_file", path])
    p = c.parallelism
    distributed.ParallelDims(dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                             cp=p.context_parallel_degree, tp=p.tensor_parallel_degree,
                             pp=p.pipeline_parallel_degree, ep=p.expert_parallel_degree,
                             etp=p.expert_tensor_parallel_degree, world_size=world)
    train_spec.get_train_spec(c.model.name).model_args[c.model.flavor]

verdict(run, what)
done(0, what + ": ConfigManager, ParallelDims (%d GPUs) and the model's train spec accept the config" % world)
)PY";

// torchtitan's Python configuration (b5bcd76c6): the module is imported by name from the
// export's directory and its function loaded by ConfigManager as `torchtitan.train --module
// --config` loads it (torchtitan/config/manager.py:54-159; tyro then rebuilds the tree, re-running
// every __post_init__ check), then ParallelDims over the plan's GPUs (its _validate,
// distributed/parallel_dims.py:166-192) and the trainer's checks that need no GPU: CUDA graphs
// beside PP or EP (trainer.py:168-199) and the step's tokens (trainer.py:409-428).
constexpr const char* kTorchtitanPy = R"PY(import inspect
sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
module = os.path.splitext(os.path.basename(path))[0]
config = need("torchtitan.config")
distributed = need("torchtitan.distributed")
what = "torchtitan %s" % version("torchtitan")

def run():
    c = config.ConfigManager().parse_args(["--module", module, "--config", "meshplan_plan"])
    p = c.parallelism
    dims = distributed.ParallelDims
    if hasattr(dims, "from_config"):
        d = dims.from_config(p, world)
    else:
        d = dims(dp_replicate=p.data_parallel_replicate_degree, dp_shard=p.data_parallel_shard_degree,
                 cp=p.context_parallel_degree, tp=p.tensor_parallel_degree, pp=p.pipeline_parallel_degree,
                 ep=p.expert_parallel_degree, world_size=world)
    t = c.training
    dp_ranks = d.dp_replicate * d.dp_shard
    m = p.num_pp_microbatches if p.pipeline_parallel_degree > 1 else 1
    per_step = t.num_tokens_per_microbatch_per_dp_rank * m * dp_ranks
    if t.num_tokens_per_train_step > 0 and t.num_tokens_per_train_step % per_step != 0:
        raise ValueError("num_tokens_per_train_step %d is not divisible by tokens per microbatch x microbatches x "
                         "dp ranks = %d (trainer.py:419-425)" % (t.num_tokens_per_train_step, per_step))

verdict(run, what)
done(0, what + ": ConfigManager loads the configuration; ParallelDims (%d GPUs) and the step's tokens accept it" % world)
)PY";

struct TempDir {
  std::string path;
  std::vector<std::string> files;
  ~TempDir() {
    for (const auto& f : files) std::remove(f.c_str());
    if (!path.empty()) rmdir(path.c_str());
  }
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

CheckResult NotRun(const std::string& why) { return {CheckVerdict::kNotRun, why}; }

}  // namespace

CheckResult CheckExport(const std::string& framework, const std::string& text, int64_t world_size, int64_t dp, int arch,
                        const std::string& python) {
  const char* body = framework == "megatron"        ? kMegatron
                     : framework == "deepspeed"     ? kDeepSpeed
                     : framework == "torchtitan"    ? kTorchtitan
                     : framework == "torchtitan-py" ? kTorchtitanPy
                                                    : nullptr;
  if (body == nullptr) return NotRun("no checker for framework '" + framework + "'");
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/meshplan-check-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  TempDir dir;
  if (mkdtemp(buf.data()) == nullptr)
    return NotRun("cannot create a temporary directory: " + std::string(strerror(errno)));
  dir.path = buf.data();
  // torchtitan imports the Python configuration by module name: the file is the module.
  const std::string exported = dir.path + (framework == "megatron"        ? "/export.sh"
                                           : framework == "deepspeed"     ? "/export.json"
                                           : framework == "torchtitan-py" ? "/meshplan_plan.py"
                                                                          : "/export.toml");
  const std::string checker = dir.path + "/check.py";
  dir.files = {exported, checker};
  if (!WriteFile(exported, text) || !WriteFile(checker, std::string(kPrelude) + body))
    return NotRun("cannot write the export and its checker under " + dir.path);

  // python checker export world dp, its stdout and stderr into one pipe.
  std::array<int, 2> pipe_fd{};
  if (pipe(pipe_fd.data()) != 0) return NotRun("cannot create a pipe: " + std::string(strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fd[1]);
  const std::string world = std::to_string(world_size), dps = std::to_string(dp), archs = std::to_string(arch);
  std::vector<char*> argv = {const_cast<char*>(python.c_str()),
                             const_cast<char*>(checker.c_str()),
                             const_cast<char*>(exported.c_str()),
                             const_cast<char*>(world.c_str()),
                             const_cast<char*>(dps.c_str()),
                             const_cast<char*>(archs.c_str()),
                             nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fd[1]);
  if (spawned != 0) {
    close(pipe_fd[0]);
    return NotRun("cannot run '" + python + "' (" + strerror(spawned) + "); --python names the interpreter");
  }
  std::string out;
  std::array<char, 4096> chunk{};
  for (ssize_t n; (n = read(pipe_fd[0], chunk.data(), chunk.size())) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  // The checker's verdict is its last line; anything before it is the interpreter's own (a
  // traceback if the checker itself failed).
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const size_t nl = out.rfind('\n');
  const std::string last = nl == std::string::npos ? out : out.substr(nl + 1);
  if (!WIFEXITED(status)) return NotRun("'" + python + "' was stopped by signal " + std::to_string(WTERMSIG(status)));
  switch (WEXITSTATUS(status)) {
    case 0: return {CheckVerdict::kAccepted, last};
    case 1: return {CheckVerdict::kRejected, last};
    case 3: return NotRun(last);
    default:
      return NotRun("'" + python + "' exited with " + std::to_string(WEXITSTATUS(status)) +
                    (last.empty() ? std::string() : ": " + last));
  }
}

}  // namespace meshplan::cli
