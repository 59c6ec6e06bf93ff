// The inputs panel: model / GPU / cluster presets with editable fields and "Load HF
// config.json...", the GPU count, the parallel degrees (lists that offer every candidate but
// enable only the values core::ValidatePlan accepts for the current model and GPU count; hovering
// a greyed value shows the rule it breaks), ZeRO, SP, recompute (and its modules), activation
// offloading by layer or by module, batch, sequence, schedule,
// precision (with FP8's scaling and the BF16 first and last layers under fp8/nvfp4), a software
// stack whose defaults one choice applies (as `meshplan report --stack NAME`), where an MoE
// model's router probabilities weight its tokens, tokens to train and the
// price per GPU-hour. Every change goes straight to the
// ScenarioModel, which re-evaluates at once; the panel then shows the model's state.
// Thread-safety: GUI thread only. Slots never throw.
#ifndef MESHPLAN_GUI_VIEWS_INPUTS_PANEL_H_
#define MESHPLAN_GUI_VIEWS_INPUTS_PANEL_H_

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolButton>
#include <map>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class InputsPanel : public QScrollArea {
  Q_OBJECT

 public:
  explicit InputsPanel(ScenarioModel* scenario, QWidget* parent = nullptr);

  // For tests that drive the inputs like a user.
  QComboBox* degreeBox(Degree d) const { return degree_.at(d); }
  QSpinBox* gpusBox() const { return gpus_; }
  QDoubleSpinBox* hbmBox() const { return hbm_; }
  QComboBox* modelBox() const { return model_; }
  QComboBox* zeroBox() const { return zero_; }
  QSpinBox* gbsBox() const { return gbs_; }
  QComboBox* precisionBox() const { return precision_; }
  QComboBox* fp8ScalingBox() const { return fp8_scaling_; }
  QComboBox* moeProbsBox() const { return moe_probs_; }
  QComboBox* expertBiasBox() const { return expert_bias_; }
  QComboBox* moeDispatcherBox() const { return moe_dispatcher_; }
  QComboBox* moeRoutingBox() const { return moe_routing_; }
  QCheckBox* moeRouterPaddingBox() const { return moe_router_padding_; }
  QCheckBox* moeOpFuserBox() const { return moe_op_fuser_; }
  QDoubleSpinBox* moeImbalanceBox() const { return moe_imbalance_; }
  QSpinBox* ppFlushesBox() const { return pp_flushes_; }
  QCheckBox* fp8ParamGatherBox() const { return fp8_param_gather_; }
  QCheckBox* dtensorTpBox() const { return dtensor_tp_; }
  QCheckBox* torchCpBox() const { return torch_cp_; }
  QSpinBox* bf16LayersAtStartBox() const { return bf16_start_; }
  QSpinBox* bf16LayersAtEndBox() const { return bf16_end_; }
  QSpinBox* recomputeLayersBox() const { return recompute_layers_; }
  QCheckBox* recomputeEarlyStopBox() const { return recompute_early_stop_; }
  QSpinBox* vocabDivisibleByBox() const { return vocab_divisible_by_; }
  QComboBox* recomputeBox() const { return recompute_; }
  QComboBox* tpOverlapBox() const { return tp_overlap_; }
  QComboBox* cpKindBox() const { return cp_kind_; }
  QComboBox* offloadOptimizerBox() const { return offload_optimizer_; }
  QComboBox* offloadParamsBox() const { return offload_params_; }
  QSpinBox* offloadActivationsBox() const { return offload_activations_; }
  QCheckBox* offloadCheckpointsBox() const { return offload_checkpoints_; }
  // Module sets: a menu of checkable names each (plan.recompute_modules, plan.offload.modules).
  QToolButton* recomputeModulesButton() const { return recompute_modules_; }
  QToolButton* offloadModulesButton() const { return offload_modules_; }
  QComboBox* crossEntropyBox() const { return cross_entropy_; }
  QComboBox* stackBox() const { return stack_; }
  QLabel* messages() const { return messages_; }
  // Opens a file dialog and loads a Hugging Face config.json (or meshplan model JSON).
  void loadModelFileDialog();

 private:
  void Refresh();
  void ShowError(const QString& error);
  void EditModel(const std::function<void(core::ModelSpec&)>& edit);
  void EditPlan(const std::function<void(core::PlanSpec&)>& edit);
  // Applies a built-in software stack's defaults to the model and plan, as the CLI's --stack does
  // (core::ApplyStackWhole); the fields only some stacks set (early stop, CUDA context, vocabulary
  // padding, the FP8 parameter gather) reset first.
  void ApplyStackPreset(const QString& name);
  // A change of an EnumBox sets the plan field it stands for.
  template <typename E>
  void BindEnum(QComboBox* box, E core::PlanSpec::*field);

  ScenarioModel* scenario_;
  QComboBox *model_, *gpu_, *cluster_;
  QPushButton* load_hf_;
  QSpinBox *layers_, *hidden_, *heads_, *kv_heads_, *ffn_, *vocab_, *window_;
  QLabel* params_;
  QDoubleSpinBox *hbm_, *peak_, *price_, *tokens_;
  QLabel* peak_label_;
  QSpinBox* gpus_;
  std::map<Degree, QComboBox*> degree_;
  QLabel* dp_;
  QComboBox *zero_, *recompute_, *schedule_, *precision_, *fp8_scaling_, *moe_probs_, *expert_bias_, *moe_dispatcher_,
      *moe_routing_;
  QComboBox* stack_;  // "apply a stack's defaults"
  // The stack last applied and the model and plan it left: the combo names it while they hold.
  QString applied_stack_;
  core::ModelSpec applied_model_;
  core::PlanSpec applied_plan_;
  QComboBox *tp_overlap_, *cp_kind_, *offload_optimizer_, *offload_params_, *cross_entropy_;
  QSpinBox *recompute_layers_, *offload_activations_;  // plan.recompute_layers, plan.offload_activation_layers
  QCheckBox *sp_, *fp8_param_gather_;                  // plan.sequence_parallel, plan.fp8_param_gather
  QCheckBox* moe_router_padding_ = nullptr;            // plan.moe_router_padding
  QCheckBox* moe_op_fuser_ = nullptr;                  // plan.moe_op_fuser
  QDoubleSpinBox* moe_imbalance_ = nullptr;            // plan.moe_imbalance
  QCheckBox* recompute_early_stop_;                    // plan.recompute_early_stop
  QCheckBox* offload_checkpoints_;                     // plan.offload_checkpoints
  QToolButton* recompute_modules_;                     // plan.recompute_modules
  QToolButton* offload_modules_;                       // plan.offload_modules
  QCheckBox* dtensor_tp_;                              // plan.dtensor_tp
  QCheckBox* torch_cp_;                                // plan.torch_cp
  QSpinBox* vocab_divisible_by_;                       // plan.vocab_divisible_by
  QSpinBox* pp_flushes_;                               // plan.pp_flushes
  QSpinBox *mbs_, *gbs_, *seq_;
  QSpinBox *bf16_start_, *bf16_end_;  // plan.bf16_layers_at_start / _at_end
  QLabel* messages_;
  QString error_;  // the last load error, shown until the next successful change
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_INPUTS_PANEL_H_
