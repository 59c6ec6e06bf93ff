// A background job runner for the GUI: heavy work (plan search, Monte Carlo, large discrete-event
// simulations) runs on its own std::thread so the window never freezes. One Worker runs one kind
// of job; starting a new job cancels the previous one (its results are dropped, its thread is
// joined once it has finished). Jobs receive a Context: they poll `cancelled()`, report
// `SetProgress()` in [0, 1], and hand results to the GUI thread with `Post()`.
//
// Thread-safety: a Worker lives on the GUI thread and all its methods are called there. A job's
// function runs on the worker thread and must capture its inputs by value (core/sim values).
// Posted closures and the finished() signal run on the GUI thread, and only for the current job.
#ifndef MESHPLAN_GUI_MODELS_WORKER_H_
#define MESHPLAN_GUI_MODELS_WORKER_H_

#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace meshplan::gui {

class Worker : public QObject {
  Q_OBJECT

 public:
  class Context {
   public:
    bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
    void SetProgress(double fraction) { progress_.store(fraction, std::memory_order_relaxed); }
    // Runs `fn` on the GUI thread later, unless this job was cancelled or superseded by then.
    void Post(std::function<void()> fn);

   private:
    friend class Worker;
    Worker* owner_ = nullptr;
    uint64_t generation_ = 0;
    std::atomic<bool> cancel_{false};
    std::atomic<double> progress_{0};
  };
  using Job = std::function<void(Context&)>;

  explicit Worker(QObject* parent = nullptr);
  ~Worker() override;  // cancels and joins every thread

  // Cancels the running job (if any) and starts `job`. `label` says what runs ("searching TP x PP").
  void Start(const QString& label, Job job);
  void Cancel();
  bool busy() const { return running_; }
  QString label() const { return label_; }
  double progress() const;
  // Blocks until the current job has finished and its posted results have been delivered
  // (screenshots and tests). Processes events while waiting.
  void WaitForIdle();

 signals:
  void started(const QString& label);
  void progressChanged(double fraction);
  // The current job returned (cancelled: it was stopped by Cancel()).
  void finished(bool cancelled);

 private:
  struct Thread {
    std::shared_ptr<Context> context;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  // What a job hands to the GUI thread: a result closure, or the note that it returned. They go
  // through inbox_ under a std::mutex (so the hand-off is visible to ThreadSanitizer, which does
  // not see Qt's own event-queue locking), and a queued call drains the inbox in order.
  struct Item {
    uint64_t generation = 0;
    bool returned = false;
    bool cancelled = false;
    std::function<void()> fn;
  };
  void Enqueue(Item item);  // any thread
  void Drain();             // GUI thread
  void Deliver(uint64_t generation, const std::function<void()>& fn);
  void JobReturned(uint64_t generation, bool cancelled);
  void ReapFinishedThreads();

  std::mutex inbox_mu_;
  std::vector<Item> inbox_;  // guarded by inbox_mu_

  std::list<std::unique_ptr<Thread>> threads_;
  std::shared_ptr<Context> current_;
  uint64_t generation_ = 0;
  bool running_ = false;
  QString label_;
  QTimer progress_timer_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_WORKER_H_
