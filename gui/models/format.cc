#include "gui/models/format.h"

#include <cmath>

namespace meshplan::gui {

QString Gb(int64_t bytes) { return QString::number(GbValue(bytes), 'f', 2); }

QString Count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e12) return QString::number(n / 1e12, 'g', 4) + "T";
  if (a >= 1e9) return QString::number(n / 1e9, 'g', 4) + "B";
  if (a >= 1e6) return QString::number(n / 1e6, 'g', 4) + "M";
  if (a >= 1e4) return QString::number(n / 1e3, 'g', 4) + "k";
  return QString::number(n, 'f', 0);
}

QString Duration(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return QString::number(s * 1e6, 'f', 1) + " us";
  if (a < 1) return QString::number(s * 1e3, 'f', 1) + " ms";
  if (a < 120) return QString::number(s, 'f', 3) + " s";
  if (a < 2 * 3600) return QString::number(s / 60, 'f', 1) + " min";
  if (a < 2 * 86400) return QString::number(s / 3600, 'f', 1) + " h";
  return QString::number(s / 86400, 'f', 1) + " days";
}

QString Dollars(double usd) {
  const double a = std::fabs(usd);
  if (a >= 1e9) return "$" + QString::number(usd / 1e9, 'f', 2) + "B";
  if (a >= 1e6) return "$" + QString::number(usd / 1e6, 'f', 2) + "M";
  if (a >= 1e4) return "$" + QString::number(usd / 1e3, 'f', 1) + "k";
  return "$" + QString::number(usd, 'f', 0);
}

QString LayerRange(const std::vector<int64_t>& layers) {
  QString out;
  size_t i = 0;
  while (i < layers.size()) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.isEmpty()) out += ",";
    out += QString::number(layers[i]);
    if (j > i) out += "-" + QString::number(layers[j]);
    i = j + 1;
  }
  return out;
}

QString Percent(double fraction, int decimals) { return QString::number(100 * fraction, 'f', decimals) + "%"; }

}  // namespace meshplan::gui
