// Plans pinned side by side (up to four): one column per pinned plan, one row per quantity
// (plan, memory, speed, cost). Each pin keeps a copy of its scenario and evaluation, so later
// edits do not change it. Rows whose values differ between pins are marked (bold) so the eye
// goes to what changed.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_COMPARE_MODEL_H_
#define MESHPLAN_GUI_MODELS_COMPARE_MODEL_H_

#include <QAbstractTableModel>
#include <vector>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kMaxPins = 4;
  enum Row {
    kModel,
    kHardware,
    kDegrees,
    kZero,
    kSpRecompute,
    kBatch,
    kSchedule,
    kMemory,
    kFits,
    kStepTime,
    kTokensPerS,
    kMfu,
    kDays,
    kGpuHours,
    kCost,
    kEnergy,
    kRowCount
  };
  static constexpr int kValueRole = Qt::UserRole;  // the raw number where the row has one

  explicit CompareModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Pins a copy (a plan that does not validate is pinned too, and says so). When four are
  // pinned, the oldest is dropped. Returns the column.
  int pin(const QString& label, const core::Scenario& s, const Evaluation& e);
  void unpin(int column);
  void clear();
  const core::Scenario& scenario(int column) const { return pins_[static_cast<size_t>(column)].scenario; }
  static QString rowName(Row r);

 private:
  struct Pin {
    QString label;
    core::Scenario scenario;
    Evaluation evaluation;
  };
  QString text(const Pin& p, Row r) const;
  QVariant value(const Pin& p, Row r) const;
  std::vector<Pin> pins_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_COMPARE_MODEL_H_
