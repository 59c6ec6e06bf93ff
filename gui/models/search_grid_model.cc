#include "gui/models/search_grid_model.h"

#include <algorithm>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

std::vector<int64_t> Divisors(int64_t n, int64_t cap) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= std::min(n, cap); ++v)
    if (n % v == 0) out.push_back(v);
  return out;
}

void Restrict(sim::SearchOptions* o, SearchAxis a, int64_t v) {
  switch (a) {
    case SearchAxis::kTp: o->tp = {v}; break;
    case SearchAxis::kPp: o->pp = {v}; break;
    case SearchAxis::kCp: o->cp = {v}; break;
    case SearchAxis::kEp: o->ep = {v}; break;
    case SearchAxis::kVpp: o->vpp = {v}; break;
    case SearchAxis::kZero: o->zero = {static_cast<int>(v)}; break;
    case SearchAxis::kMbs: o->mbs = {v}; break;
  }
}

// The inputs a search depends on (not the degrees it chooses).
bool SameSearchInputs(const core::Scenario& a, const core::Scenario& b) {
  return a.model == b.model && a.gpu == b.gpu && a.cluster == b.cluster && a.plan.gpus == b.plan.gpus &&
         a.plan.global_batch == b.plan.global_batch && a.plan.seq_len == b.plan.seq_len &&
         a.plan.precision == b.plan.precision && a.plan.dtypes == b.plan.dtypes && a.plan.optimizer == b.plan.optimizer;
}

}  // namespace

const char* Name(SearchAxis a) {
  switch (a) {
    case SearchAxis::kTp: return "TP";
    case SearchAxis::kPp: return "PP";
    case SearchAxis::kCp: return "CP";
    case SearchAxis::kEp: return "EP";
    case SearchAxis::kVpp: return "VPP";
    case SearchAxis::kZero: return "ZeRO";
    case SearchAxis::kMbs: return "micro batch";
  }
  return "?";
}

int64_t SearchGridModel::PlanValue(const core::PlanSpec& p, SearchAxis a) {
  switch (a) {
    case SearchAxis::kTp: return p.tp;
    case SearchAxis::kPp: return p.pp;
    case SearchAxis::kCp: return p.cp;
    case SearchAxis::kEp: return p.ep;
    case SearchAxis::kVpp: return p.vpp;
    case SearchAxis::kZero: return p.zero;
    case SearchAxis::kMbs: return p.micro_batch;
  }
  return 0;
}

SearchGridModel::SearchGridModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::scenarioChanged, this, [this] {
    const bool stale = has_run_ && !SameSearchInputs(searched_, scenario_->scenario());
    if (stale != stale_) {
      stale_ = stale;
      emit staleChanged(stale_);
    }
  });
}

std::vector<int64_t> SearchGridModel::axisValues(SearchAxis a) const {
  const core::Scenario& s = scenario_->scenario();
  const int64_t gpus = std::max<int64_t>(s.plan.gpus, 1);
  switch (a) {
    case SearchAxis::kTp: return Divisors(gpus, 32);
    case SearchAxis::kPp: return Divisors(gpus, std::min<int64_t>(std::max<int64_t>(s.model.layers, 1), 32));
    case SearchAxis::kCp: return Divisors(gpus, 16);
    case SearchAxis::kEp: return Divisors(gpus, s.model.moe ? std::min<int64_t>(s.model.moe->experts, 64) : 1);
    case SearchAxis::kVpp: return {1, 2, 3, 4, 6, 8};
    case SearchAxis::kZero: return {0, 1, 2, 3};
    case SearchAxis::kMbs: return {1, 2, 4, 8};
  }
  return {};
}

int SearchGridModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(ys_.size());
}
int SearchGridModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(xs_.size());
}

const SearchGridModel::Cell& SearchGridModel::cell(int row, int col) const {
  return cells_[static_cast<size_t>(row) * xs_.size() + static_cast<size_t>(col)];
}

std::optional<core::Scenario> SearchGridModel::cellScenario(int row, int col) const {
  if (row < 0 || col < 0 || row >= rowCount() || col >= columnCount()) return std::nullopt;
  const Cell& c = cell(row, col);
  if (!c.plan) return std::nullopt;
  core::Scenario s = searched_;
  s.plan = c.plan->plan;
  return s;
}

void SearchGridModel::cancel() { worker_.Cancel(); }

void SearchGridModel::run(SearchAxis x, SearchAxis y) {
  worker_.Cancel();
  beginResetModel();
  x_ = x;
  y_ = y;
  xs_ = axisValues(x);
  ys_ = axisValues(y);
  cells_.assign(xs_.size() * ys_.size(), Cell{});
  searched_ = scenario_->scenario();
  min_tps_gpu_ = max_tps_gpu_ = 0;
  has_run_ = true;
  endResetModel();
  if (stale_) {
    stale_ = false;
    emit staleChanged(false);
  }
  const double tokens = scenario_->evaluation().valid ? scenario_->evaluation().tokens : scenario_->tokensSetting();
  worker_.Start(
      QString("searching %1 x %2").arg(Name(x), Name(y)),
      [this, s = searched_, profile = scenario_->profile(), x, y, xs = xs_, ys = ys_, tokens](Worker::Context& ctx) {
        const size_t total = xs.size() * ys.size();
        size_t done = 0;
        for (size_t r = 0; r < ys.size(); ++r) {
          for (size_t c = 0; c < xs.size(); ++c) {
            if (ctx.cancelled()) return;
            sim::SearchOptions o;
            o.top_k = 1;
            o.tokens = tokens;
            Restrict(&o, x, xs[c]);
            Restrict(&o, y, ys[r]);
            sim::SearchResult res = sim::SearchPlans(s.model, s.gpu, s.cluster, s.plan, profile, o);
            Cell cell;
            cell.evaluated = res.stats.evaluated;
            if (!res.top.empty()) {
              cell.state = CellState::kFits;
              cell.plan = res.top.front();
            } else if (res.lightest_rejected) {
              cell.state = CellState::kOutOfMemory;
              cell.plan = res.lightest_rejected;
            } else if (res.stats.Pruned() > 0 || res.stats.out_of_memory > 0) {
              // Every variant was ruled out by memory before an estimate was kept.
              cell.state = CellState::kOutOfMemory;
              cell.note = QString("the model states alone exceed HBM in all %1 variants (closed-form bound)")
                              .arg(res.stats.Pruned() + res.stats.out_of_memory);
            } else {
              cell.state = CellState::kNoPlan;
              cell.note = res.invalid_examples.empty() ? QString("no plan to try with these values")
                                                       : Q(res.invalid_examples.front());
            }
            ctx.SetProgress(static_cast<double>(++done) / static_cast<double>(total));
            ctx.Post([this, r, c, cell = std::move(cell)] {
              cells_[r * xs_.size() + c] = cell;
              if (cell.state == CellState::kFits) {
                const double v = cell.plan->step.tokens_per_s_per_gpu;
                min_tps_gpu_ = min_tps_gpu_ > 0 ? std::min(min_tps_gpu_, v) : v;
                max_tps_gpu_ = std::max(max_tps_gpu_, v);
              }
              // Every cell's colour is relative to the best so far: repaint them all.
              emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
            });
          }
        }
      });
}

QVariant SearchGridModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const Cell& c = cell(index.row(), index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (c.state) {
        case CellState::kPending: return "...";
        case CellState::kFits: return Count(c.plan->step.tokens_per_s_per_gpu);
        case CellState::kOutOfMemory: return "OOM";
        case CellState::kNoPlan: return "n/a";
      }
      return {};
    case kStateRole: return static_cast<int>(c.state);
    case kTokensPerSPerGpuRole:
      return c.state == CellState::kFits ? QVariant(c.plan->step.tokens_per_s_per_gpu) : QVariant();
    case Qt::ToolTipRole: {
      const QString where = QString("%1 %2, %3 %4\n")
                                .arg(Name(x_))
                                .arg(xs_[static_cast<size_t>(index.column())])
                                .arg(Name(y_))
                                .arg(ys_[static_cast<size_t>(index.row())]);
      if (c.state == CellState::kPending) return where + "not computed yet";
      if (c.state == CellState::kNoPlan) return where + "no valid plan: " + c.note;
      if (!c.plan) return where + "OUT OF MEMORY: " + c.note;
      const sim::RankedPlan& rp = *c.plan;
      const core::PlanSpec& p = rp.plan;
      QString t = where;
      t += c.state == CellState::kFits ? "best plan: " : "OUT OF MEMORY; lightest variant: ";
      t += QString("tp %1 pp %2 dp %3 cp %4 ep %5 vpp %6 | zero %7 | sp %8 | recompute %9")
               .arg(p.tp)
               .arg(p.pp)
               .arg(p.dp)
               .arg(p.cp)
               .arg(p.ep)
               .arg(p.vpp)
               .arg(p.zero)
               .arg(p.sequence_parallel ? "on" : "off")
               .arg(core::Name(p.recompute));
      t += QString(" | mbs %1 | %2\n").arg(p.micro_batch).arg(core::Name(p.schedule));
      t += QString("memory %1 of %2 GB per GPU").arg(Gb(rp.per_gpu_bytes), Gb(rp.capacity_bytes));
      if (c.state == CellState::kFits)
        t += QString("\nstep %1, %2 tokens/s (%3 per GPU), MFU %4\n%5 days, %6\nclick to load this plan")
                 .arg(Duration(rp.step.time_s), Count(rp.step.tokens_per_s), Count(rp.step.tokens_per_s_per_gpu),
                      Percent(rp.step.mfu), QString::number(rp.train.days, 'f', 1), Dollars(rp.train.cost_usd));
      else t += "\nclick to load it and see where the memory goes";
      return t;
    }
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignCenter);
    default: return {};
  }
}

QVariant SearchGridModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Horizontal && section >= 0 && section < columnCount())
    return QString("%1 %2").arg(Name(x_)).arg(xs_[static_cast<size_t>(section)]);
  if (orientation == Qt::Vertical && section >= 0 && section < rowCount())
    return QString("%1 %2").arg(Name(y_)).arg(ys_[static_cast<size_t>(section)]);
  return {};
}

}  // namespace meshplan::gui
