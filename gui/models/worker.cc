#include "gui/models/worker.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QMetaObject>
#include <QThread>
#include <utility>

namespace meshplan::gui {

void Worker::Context::Post(std::function<void()> fn) {
  if (cancelled()) return;
  owner_->Enqueue({generation_, false, false, std::move(fn)});
}

void Worker::Enqueue(Item item) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(std::move(item));
  }
  // Drained on the GUI thread; dropped by Qt if the Worker is gone by then (it joins first anyway).
  QMetaObject::invokeMethod(
      this, [this] { Drain(); }, Qt::QueuedConnection);
}

void Worker::Drain() {
  std::vector<Item> items;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    items.swap(inbox_);
  }
  for (const Item& item : items) {
    if (item.returned) JobReturned(item.generation, item.cancelled);
    else Deliver(item.generation, item.fn);
  }
}

Worker::Worker(QObject* parent) : QObject(parent) {
  progress_timer_.setInterval(100);
  connect(&progress_timer_, &QTimer::timeout, this, [this] {
    if (running_) emit progressChanged(progress());
  });
}

Worker::~Worker() {
  if (current_) current_->cancel_ = true;
  for (auto& t : threads_) {
    t->context->cancel_ = true;
    if (t->thread.joinable()) t->thread.join();
  }
}

double Worker::progress() const { return current_ ? current_->progress_.load(std::memory_order_relaxed) : 0.0; }

void Worker::Start(const QString& label, Job job) {
  Cancel();
  ReapFinishedThreads();
  auto context = std::make_shared<Context>();
  context->owner_ = this;
  context->generation_ = ++generation_;
  current_ = context;
  running_ = true;
  label_ = label;
  auto holder = std::make_unique<Thread>();
  holder->context = context;
  Thread* raw = holder.get();
  holder->thread = std::thread([this, raw, context, job = std::move(job)] {
    job(*context);
    Enqueue({context->generation_, true, context->cancelled(), {}});
    raw->done = true;
  });
  threads_.push_back(std::move(holder));
  progress_timer_.start();
  emit started(label);
  emit progressChanged(0);
}

void Worker::Cancel() {
  if (!running_) return;
  current_->cancel_ = true;
  running_ = false;
  ++generation_;  // results still in flight from the cancelled job are dropped
  progress_timer_.stop();
  emit finished(true);
}

void Worker::Deliver(uint64_t generation, const std::function<void()>& fn) {
  if (generation != generation_ || !current_ || current_->cancelled()) return;
  fn();
}

void Worker::JobReturned(uint64_t generation, bool cancelled) {
  ReapFinishedThreads();
  if (generation != generation_) return;
  running_ = false;
  progress_timer_.stop();
  emit progressChanged(1.0);
  emit finished(cancelled);
}

void Worker::ReapFinishedThreads() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if ((*it)->done) {
      if ((*it)->thread.joinable()) (*it)->thread.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

void Worker::WaitForIdle() {
  while (running_) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    if (running_) QThread::msleep(1);
  }
  QCoreApplication::processEvents();
}

}  // namespace meshplan::gui
