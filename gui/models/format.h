// Number formatting shared by the GUI's models and views (presentation only: no model math).
#ifndef MESHPLAN_GUI_MODELS_FORMAT_H_
#define MESHPLAN_GUI_MODELS_FORMAT_H_

#include <QString>
#include <cstdint>
#include <string>
#include <vector>

namespace meshplan::gui {

inline QString Q(const std::string& s) { return QString::fromStdString(s); }
// Decimal gigabytes with two decimals, as `meshplan report`'s table: 17640000000 -> "17.64".
QString Gb(int64_t bytes);
inline double GbValue(int64_t bytes) { return static_cast<double>(bytes) / 1e9; }
// 70553706496 -> "70.55B"; 1.41e12 -> "1.411T" (as cli::HumanCount).
QString Count(double n);
// Seconds with a unit that suits them: "1.23 s", "45.6 ms", "3.2 h".
QString Duration(double s);
// "$1.23M", "$45.6k", "$980".
QString Dollars(double usd);
// "0-39" or "0-9,40-49": a pipeline rank's layers.
QString LayerRange(const std::vector<int64_t>& layers);
// 0.582 -> "58.2%".
QString Percent(double fraction, int decimals = 1);

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_FORMAT_H_
