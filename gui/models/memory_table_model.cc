#include "gui/models/memory_table_model.h"

#include <QBrush>
#include <QColor>

#include "gui/models/format.h"

namespace meshplan::gui {

MemoryTableModel::MemoryTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::evaluated, this, &MemoryTableModel::Reset);
  Reset();
}

void MemoryTableModel::Reset() {
  beginResetModel();
  const Evaluation& e = scenario_->evaluation();
  report_ = e.valid ? e.memory : core::MemoryReport{};
  plan_ = scenario_->plan();
  endResetModel();
}

int MemoryTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(report_.stages.size());
}

int MemoryTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

int64_t MemoryTableModel::capacityBytes() const { return report_.capacity_bytes; }

bool MemoryTableModel::overCapacity(int row) const {
  return row >= 0 && row < rowCount() && report_.stages[static_cast<size_t>(row)].total_bytes > report_.capacity_bytes;
}

int64_t MemoryTableModel::bytes(int row, Column column) const {
  if (row < 0 || row >= rowCount()) return 0;
  const core::StageMemory& s = report_.stages[static_cast<size_t>(row)];
  switch (column) {
    case kStage: return s.stage;
    case kLayers: return static_cast<int64_t>(s.layers.size());
    case kWeights: return s.weights_bytes;
    case kGrads: return s.grads_bytes;
    case kMasterWeights: return s.master_weights_bytes;
    case kMoments: return s.optimizer_moments_bytes;
    case kActivations: return s.activations_bytes;
    case kCudaContext: return s.cuda_context_bytes;
    case kCublas: return s.cublas_workspace_bytes;
    case kNccl: return s.nccl_bytes;
    case kZero3Buffers: return s.zero3_prefetch_bytes + s.zero3_grad_bytes;
    case kFragmentation: return s.fragmentation_bytes;
    case kOverheads: return s.other_bytes;
    case kTotal: return s.total_bytes;
    case kHeadroom: return report_.capacity_bytes - s.total_bytes;
    case kColumnCount: break;
  }
  return 0;
}

QString MemoryTableModel::termName(Column c) {
  switch (c) {
    case kStage: return "stage";
    case kLayers: return "layers";
    case kWeights: return "weights";
    case kGrads: return "gradients";
    case kMasterWeights: return "master weights";
    case kMoments: return "optimizer moments";
    case kActivations: return "activations";
    case kCudaContext: return "CUDA context";
    case kCublas: return "cuBLAS workspace";
    case kNccl: return "NCCL buffers";
    case kZero3Buffers: return "ZeRO-3 buffers";
    case kFragmentation: return "fragmentation";
    case kOverheads: return "fixed overheads";
    case kTotal: return "total";
    case kHeadroom: return "headroom";
    case kColumnCount: break;
  }
  return {};
}

QString MemoryTableModel::termTooltip(int row, Column c) const {
  if (row < 0 || row >= rowCount()) return {};
  const core::StageMemory& s = report_.stages[static_cast<size_t>(row)];
  const auto& p = plan_;
  const QString head = QString("stage %1, %2: %3 GB\n").arg(s.stage).arg(termName(c)).arg(Gb(bytes(row, c)));
  const QString group = QString::number(report_.dense_shard_group);
  switch (c) {
    case kWeights:
      return head + QString("%1 parameters on this GPU, %2 bytes each (%3), %4")
                        .arg(Count(static_cast<double>(s.params)))
                        .arg(core::DtypeBytes(p.dtypes.weights))
                        .arg(core::Name(p.dtypes.weights))
                        .arg(core::Fsdp2KeepsNoLowPrecisionShard(p)
                                 ? QString("none kept: FSDP2's shards are the master weights, cast while gathered")
                             : p.zero >= 3 ? "sharded over " + group + " ranks (ZeRO-3)"
                                           : QString("replicated"));
    case kGrads:
      return head + QString("%1 bytes per parameter (%2), %3")
                        .arg(core::DtypeBytes(p.dtypes.grads))
                        .arg(core::Name(p.dtypes.grads))
                        .arg(p.zero >= 2 ? "sharded over " + group + " ranks (ZeRO >= 2)" : QString("replicated"));
    case kMasterWeights:
      return head + QString("%1 bytes per parameter (%2), %3")
                        .arg(core::DtypeBytes(p.dtypes.master_weights))
                        .arg(core::Name(p.dtypes.master_weights))
                        .arg(p.zero >= 1 ? "sharded over " + group + " ranks (ZeRO >= 1)" : QString("replicated"));
    case kMoments:
      return head + QString("%1 optimizer moments (%2), %3")
                        .arg(core::Name(p.optimizer))
                        .arg(core::Name(p.dtypes.optimizer_states))
                        .arg(p.zero >= 1 ? "sharded over " + group + " ranks (ZeRO >= 1)" : QString("replicated"));
    case kActivations:
      return head +
             QString("%1 GB per microbatch for %2 layers (recompute %3) x %4 microbatches in flight (%5)%6%7%8%9")
                 .arg(Gb(s.layer_activations_bytes))
                 .arg(s.layers.size())
                 .arg(core::Name(p.recompute))
                 .arg(s.inflight_microbatches, 0, 'g', 3)
                 .arg(core::Name(p.schedule))
                 .arg(s.loss_activations_bytes ? QString(" + logits/loss %1 GB").arg(Gb(s.loss_activations_bytes))
                                               : QString())
                 .arg(s.recompute_working_bytes
                          ? QString(" + recompute working set %1 GB").arg(Gb(s.recompute_working_bytes))
                          : QString())
                 .arg(s.deferred_wgrad_bytes
                          ? QString(" + deferred head wgrad buffers %1 GB").arg(Gb(s.deferred_wgrad_bytes))
                          : QString())
                 .arg(s.pipeline_buffers_bytes
                          ? QString(" + pipeline runtime's kept outputs and gradient buffers %1 GB")
                                .arg(Gb(s.pipeline_buffers_bytes))
                          : QString()) +
             (s.offloaded_activations_bytes ? QString("; the first %1 layers' %2 GB offloaded to host memory")
                                                  .arg(p.offload_activation_layers)
                                                  .arg(Gb(s.offloaded_activations_bytes))
                                            : QString()) +
             (s.offloaded_checkpoints_bytes ? QString("; the checkpoints, %1 GB a microbatch, in host memory")
                                                  .arg(Gb(s.offloaded_checkpoints_bytes))
                                            : QString());
    case kCudaContext: return head + "assumed (profile.memory.cuda_context_bytes)";
    case kCublas: return head + "cuBLAS workspace (profile.memory.cublas_workspace_bytes)";
    case kNccl: return head + "communicators x channels x 2 x NCCL_BUFFSIZE";
    case kZero3Buffers:
      return head + (s.zero3_grad_bytes ? QString("ZeRO-3: weights gathered %1 GB + DeepSpeed 0.3's gradient buckets, "
                                                  "held gradients and the activation gradients beside them %2 GB")
                                              .arg(Gb(s.zero3_prefetch_bytes), Gb(s.zero3_grad_bytes))
                                        : QString("ZeRO-3: two layers' weights gathered at a time"));
    case kFragmentation: return head + "caching-allocator fragmentation, a share of activations (assumed)";
    case kOverheads: {
      // The pools of FSDP2's streams (docs/memory.md §4): the reduce-scatter pool's sharded gradients
      // count here only when they come beside the gradients (ZeRO-1 under PP).
      const int64_t rs_extra = core::RsPoolOnTopBytes(s, p);
      return head +
             QString(
                 "CUDA context %1 + cuBLAS %2 + TE workspaces %3 + NCCL %4 + ZeRO-3 buffers %5 + fragmentation %6 GB")
                 .arg(Gb(s.cuda_context_bytes), Gb(s.cublas_workspace_bytes), Gb(s.te_workspace_bytes),
                      Gb(s.nccl_bytes), Gb(s.zero3_prefetch_bytes + s.zero3_grad_bytes), Gb(s.fragmentation_bytes)) +
             (rs_extra ? QString(" + FSDP2 reduce-scatter pool %1 GB").arg(Gb(rs_extra)) : QString()) +
             (s.ag_pool_idle_bytes ? QString(" + FSDP2 all-gather pool %1 GB").arg(Gb(s.ag_pool_idle_bytes))
                                   : QString()) +
             (s.step_copy_on_top_bytes
                  ? QString(" + the step's all-reduce copy %1 GB").arg(Gb(s.step_copy_on_top_bytes))
                  : QString());
    }
    case kTotal:
      return head + QString("of %1 GB HBM%2")
                        .arg(Gb(report_.capacity_bytes))
                        .arg(s.total_bytes > report_.capacity_bytes
                                 ? QString(": over by %1 GB").arg(Gb(s.total_bytes - report_.capacity_bytes))
                                 : QString());
    case kHeadroom: return head + "HBM minus total (negative: does not fit)";
    case kStage: return QString("pipeline rank %1").arg(s.stage);
    case kLayers:
      return QString("model layers %1%2")
          .arg(LayerRange(s.layers))
          .arg(s.mtp_layers > 0 ? QString(" and %1 multi-token-prediction module(s)").arg(s.mtp_layers) : QString());
    case kColumnCount: break;
  }
  return {};
}

QVariant MemoryTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const auto c = static_cast<Column>(index.column());
  const int row = index.row();
  switch (role) {
    case Qt::DisplayRole:
      if (c == kStage) return QString::number(bytes(row, c));
      if (c == kLayers) {
        const core::StageMemory& st = report_.stages[static_cast<size_t>(row)];
        return LayerRange(st.layers) + (st.mtp_layers > 0 ? QString("+mtp") : QString());
      }
      return Gb(bytes(row, c));
    case kBytesRole: return QVariant::fromValue<qint64>(bytes(row, c));
    case Qt::ToolTipRole: return termTooltip(row, c);
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(c == kLayers ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if ((c == kTotal || c == kHeadroom || c == kStage) && overCapacity(row)) return QBrush(QColor(200, 0, 0));
      return {};
    default: return {};
  }
}

QVariant MemoryTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) return {};
  const auto c = static_cast<Column>(section);
  if (role == Qt::DisplayRole) {
    if (c == kStage || c == kLayers) return termName(c);
    return termName(c) + "\n(GB)";
  }
  if (role == Qt::ToolTipRole && c == kOverheads)
    return "CUDA context + cuBLAS + NCCL + ZeRO-3 buffers + fragmentation";
  return {};
}

}  // namespace meshplan::gui
