// The Sweep panel: open a sweep CSV and plot a metric against a key, one line per value of
// another key (e.g. hit rate vs block size, one line per pack size).
#include <imgui.h>

#include <cstring>
#include <optional>

#include "viz/line_chart.h"
#include "viz/panel.h"
#include "viz/sweep_table.h"
#include "viz/ui_util.h"

namespace kvsim::viz {
namespace {

class SweepPanel : public IPanel {
 public:
  const char* id() const override { return "sweep"; }
  const char* title() const override { return "Sweep"; }
  const char* help() const override {
    return "open a sweep CSV (kvsim sweep -o DIR) and pick the metric, the x key and the key "
           "that splits lines; hover a point for its value";
  }

  std::string error(const ViewerContext& ctx) const override {
    return !error_.empty() ? error_ : IPanel::error(ctx);
  }
  void Draw(ViewerContext& ctx) override {
    if (!tried_initial_ && !ctx.sweep_csv.empty()) {
      tried_initial_ = true;
      std::strncpy(path_, ctx.sweep_csv.c_str(), sizeof path_ - 1);
      Load();
    }
    ImGui::PushItemWidth(420);
    const bool enter =
        ImGui::InputText("##path", path_, sizeof path_, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::PopItemWidth();
    ImGui::SameLine();
    if (ImGui::Button("open") || enter) Load();
    if (!error_.empty()) {
      ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", error_.c_str());
    }
    if (!table_) {
      ImGui::TextWrapped(
          "No sweep CSV loaded. Run `kvsim sweep SCENARIO -o DIR` and open its CSV here, or "
          "start the viewer with `kvsim-viz --sweep FILE.csv`.");
      return;
    }
    const SweepTable& t = *table_;
    ImGui::TextDisabled("%s: %zu rows, %zu columns (%zu swept keys)", t.source.c_str(),
                        t.rows.size(), t.columns.size(), t.KeyColumns().size());
    ImGui::PushItemWidth(200);
    ColumnCombo("metric (y)", &metric_, false);
    ImGui::SameLine();
    ColumnCombo("against (x)", &x_, false);
    ImGui::SameLine();
    ColumnCombo("one line per", &series_, true);
    ImGui::PopItemWidth();
    ImGui::SameLine();
    ImGui::Checkbox("log2 x", &log_x_);
    ImGui::SameLine();
    ImGui::Checkbox("y from 0", &y_zero_);
    const ChartData data = BuildChart(t, x_, series_, metric_);
    ChartOptions opt;
    opt.x_label = x_ >= 0 ? t.columns[static_cast<size_t>(x_)] : "";
    opt.y_label = metric_ >= 0 ? t.columns[static_cast<size_t>(metric_)] : "";
    opt.log_x = log_x_ && x_ >= 0 && t.numeric[static_cast<size_t>(x_)];
    opt.y_from_zero = y_zero_;
    if (data.skipped_rows > 0) {
      ImGui::TextDisabled("%d rows without a numeric value were left out", data.skipped_rows);
    }
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    DrawLineChart(data, opt, ImVec2(avail.x, std::max(120.0f, avail.y - 4)));
  }

 private:
  void Load() {
    auto t = LoadSweepCsv(path_);
    if (!t.ok()) {
      error_ = t.status().message();
      return;
    }
    error_.clear();
    table_ = std::move(t.value());
    const auto keys = table_->KeyColumns();
    const auto metrics = table_->MetricColumns();
    x_ = keys.empty() ? 0 : keys[0];
    series_ = keys.size() > 1 ? keys[1] : -1;
    metric_ = metrics.empty() ? static_cast<int>(table_->columns.size()) - 1 : metrics[0];
    // Prefer a hit-rate metric when there is one: it is what the sweeps are about.
    for (int m : metrics) {
      if (table_->columns[static_cast<size_t>(m)].find("hit") != std::string::npos) {
        metric_ = m;
        break;
      }
    }
    log_x_ = false;
    if (x_ >= 0 && table_->columns[static_cast<size_t>(x_)].find("size") != std::string::npos) {
      log_x_ = true;
    }
  }

  void ColumnCombo(const char* label, int* col, bool allow_none) {
    const SweepTable& t = *table_;
    const char* cur = *col >= 0 ? t.columns[static_cast<size_t>(*col)].c_str() : "(none)";
    if (ImGui::BeginCombo(label, cur)) {
      if (allow_none && ImGui::Selectable("(none)", *col < 0)) *col = -1;
      for (size_t i = 0; i < t.columns.size(); ++i) {
        std::string name = t.columns[i] + (t.is_key[i] ? "  [key]" : "");
        if (ImGui::Selectable(name.c_str(), *col == static_cast<int>(i)))
          *col = static_cast<int>(i);
      }
      ImGui::EndCombo();
    }
  }

  char path_[1024] = {0};
  bool tried_initial_ = false;
  std::optional<SweepTable> table_;
  std::string error_;
  int x_ = 0, series_ = -1, metric_ = 0;
  bool log_x_ = false, y_zero_ = true;
};

}  // namespace

std::unique_ptr<IPanel> MakeSweepPanel() { return std::make_unique<SweepPanel>(); }

}  // namespace kvsim::viz
