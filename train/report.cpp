#include <dlf/train/report.h>

#include <dlf/train/report_axis.h>

#include <dlf/device/atomic_file.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dlf::train {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, const char* format = "%.5g") {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// Category colours: parameters, gradients, optimizer state, activations, temporaries.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};
static_assert(std::size(kColours) == kMemoryCategories);

struct Series {
  std::string name, colour;
  std::vector<std::pair<double, double>> points;
};

// A chart's frame: maps data to pixels and draws the axes with their round ticks, which bound
// it.
struct Frame {
  static constexpr double kWidth = 730, kHeight = 300, kLeft = 80, kRight = 170, kTop = 30,
                          kBottom = 45;
  AxisTicks xs, ys;

  double x(double v) const {
    const double x0 = xs.values.front(), x1 = xs.values.back();
    return kLeft + (v - x0) / (x1 - x0) * (kWidth - kLeft - kRight);
  }
  double y(double v) const {
    const double y0 = ys.values.front(), y1 = ys.values.back();
    return kHeight - kBottom - (v - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }

  std::string axes(const std::string& title, const std::string& x_label,
                   const std::string& y_label) const {
    const double bottom = y(ys.values.front()), top = y(ys.values.back()),
                 right = x(xs.values.back());
    std::string s = "<text x=\"" + number(kLeft) + "\" y=\"18\" font-weight=\"bold\">" +
                    escape(title) + "</text>";
    s += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(bottom) + "\" x2=\"" + number(right) +
         "\" y2=\"" + number(bottom) + "\" stroke=\"#333\"/>";
    s += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(bottom) + "\" x2=\"" + number(kLeft) +
         "\" y2=\"" + number(top) + "\" stroke=\"#333\"/>";
    for (size_t i = 0; i < xs.values.size(); ++i)
      s += "<text class=\"x-tick\" x=\"" + number(x(xs.values[i])) + "\" y=\"" +
           number(bottom + 16) + "\" text-anchor=\"middle\">" + xs.labels[i] + "</text>";
    for (size_t i = 0; i < ys.values.size(); ++i) {
      const double at = y(ys.values[i]);
      s += "<text class=\"y-tick\" x=\"" + number(kLeft - 6) + "\" y=\"" + number(at + 4) +
           "\" text-anchor=\"end\">" + ys.labels[i] + "</text>";
      s += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(at) + "\" x2=\"" + number(right) +
           "\" y2=\"" + number(at) + "\" stroke=\"#ddd\"/>";
    }
    s += "<text x=\"" + number((kLeft + right) / 2) + "\" y=\"" + number(kHeight - 8) +
         "\" text-anchor=\"middle\">" + escape(x_label) + "</text>";
    s += "<text transform=\"translate(16 " + number((bottom + top) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>";
    return s;
  }

  std::string legend(int row, const std::string& name, const std::string& colour) const {
    const double ly = kTop + 18.0 * row;
    return "<rect x=\"" + number(kWidth - kRight + 12) + "\" y=\"" + number(ly - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/><text x=\"" +
           number(kWidth - kRight + 30) + "\" y=\"" + number(ly) + "\">" + escape(name) + "</text>";
  }
};

std::string svg(const std::string& body) {
  return "<svg class=\"figure\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         number(Frame::kWidth) + "\" height=\"" + number(Frame::kHeight) +
         "\" font-family=\"sans-serif\" font-size=\"12\">" + body + "</svg>\n";
}

// Lines through each series' points; empty when there is nothing to draw.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (!std::isfinite(x0) || !std::isfinite(y0)) return "";
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) {  // one value: a band around it
    const double pad = y0 != 0 ? std::abs(y0) * 0.05 : 1;
    y0 -= pad, y1 += pad;
  }
  const Frame f{axis_ticks(x0, x1, 5, true), axis_ticks(y0, y1)};
  std::string body = f.axes(title, x_label, y_label);
  int row = 0;
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    std::string points;
    for (const auto& [x, y] : s.points) points += number(f.x(x)) + "," + number(f.y(y)) + " ";
    body += "<polyline fill=\"none\" stroke=\"" + s.colour + "\" stroke-width=\"2\" points=\"" +
            points + "\"/>";
    if (s.points.size() == 1)  // one point: a dot, so it shows
      body += "<circle cx=\"" + number(f.x(s.points[0].first)) + "\" cy=\"" +
              number(f.y(s.points[0].second)) + "\" r=\"4\" fill=\"" + s.colour + "\"/>";
    body += f.legend(row++, s.name, s.colour);
  }
  return svg(body);
}

// The live bytes of each category over one step's ops, stacked.
std::string memory_chart(const std::vector<MemorySample>& samples) {
  if (samples.empty()) return "";
  double top = 0;
  for (const MemorySample& s : samples) {
    int64_t live = 0;
    for (int64_t b : s.live_by) live += b;
    top = std::max(top, double(live) / (1 << 20));
  }
  const Frame f{axis_ticks(double(samples.front().op), double(samples.back().op) + 1, 5, true),
                axis_ticks(0, top > 0 ? top : 1)};
  std::string body = f.axes("Memory over the profiled step, by category", "op", "MiB live");
  std::vector<double> below(samples.size(), 0.0);
  for (int c = 0; c < kMemoryCategories; ++c) {
    std::string upper, lower;  // the band's top left to right, then its bottom right to left
    for (size_t i = 0; i < samples.size(); ++i) {
      below[i] += double(samples[i].live_by[size_t(c)]) / (1 << 20);
      upper += number(f.x(double(samples[i].op))) + "," + number(f.y(below[i])) + " ";
    }
    for (size_t i = samples.size(); i-- > 0;) {
      const double bottom = below[i] - double(samples[i].live_by[size_t(c)]) / (1 << 20);
      lower += number(f.x(double(samples[i].op))) + "," + number(f.y(bottom)) + " ";
    }
    body += "<polygon fill=\"" + std::string(kColours[c]) + "\" fill-opacity=\"0.8\" points=\"" +
            upper + lower + "\"/>";
    body += f.legend(c, std::string(memory_category_name(MemoryCategory(c))), kColours[c]);
  }
  return svg(body);
}

std::string op_table(const std::vector<std::pair<std::string, OpProfile::Row>>& ops,
                     const OpProfile::Row& outermost) {
  std::string s =
      "<table><tr><th>op</th><th>calls</th><th>self ms</th><th>total ms</th><th>self %</th>"
      "<th>GFLOP/s</th><th>GB/s</th></tr>\n";
  for (const auto& [name, r] : ops) {
    s += "<tr><td>" + escape(name) + "</td><td>" + std::to_string(r.calls) + "</td><td>" +
         number(r.self_seconds * 1e3, "%.3f") + "</td><td>" + number(r.seconds * 1e3, "%.3f") +
         "</td><td>" +
         number(outermost.seconds > 0 ? 100 * r.self_seconds / outermost.seconds : 0, "%.1f") +
         "</td><td>" + number(r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0, "%.1f") + "</td><td>" +
         number(r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0, "%.1f") + "</td></tr>\n";
  }
  return s + "</table>\n";
}

// Marks the page with how many figures it has and how many the browser drew (a headless
// browser's DOM dump then says whether it renders).
constexpr const char* kRenderCheck = R"(<script>
const figures = [...document.querySelectorAll('svg.figure')];
const drawn = figures.filter(f => {
  const box = f.getBBox();
  return box.width > 0 && box.height > 0 && f.querySelector('polyline, polygon') !== null;
});
document.body.dataset.figures = figures.length;
document.body.dataset.rendered = drawn.length;
</script>
)";

}  // namespace

RunReport::RunReport(ReportHeader header, Device device, int64_t profiled_step)
    : header_(std::move(header)), device_(device), profiled_step_(profiled_step) {}

void RunReport::begin_step(int64_t step) {
  if (step != profiled_step_) return;
  ops_.emplace();
  memory_.emplace(device_);
}

void RunReport::end_step(int64_t step, double loss, double items_per_s, double sim_items_per_s) {
  steps_.push_back({step + 1, loss, items_per_s, sim_items_per_s});
  if (!ops_) return;
  Profiled p{{ops_->rows().begin(), ops_->rows().end()}, ops_->outermost(), memory_->timeline()};
  std::sort(p.ops.begin(), p.ops.end(), [](const auto& a, const auto& b) {
    return a.second.self_seconds > b.second.self_seconds;
  });
  if (p.ops.size() > 25) p.ops.resize(25);
  profiled_ = std::move(p);
  ops_.reset();
  memory_.reset();
}

void RunReport::evaluation(int64_t step, double loss) { evaluations_.emplace_back(step, loss); }

void RunReport::write(const std::string& path) const {
  Series train{"training loss", kColours[0], {}}, validation{"validation loss", kColours[3], {}};
  Series measured{"measured", kColours[0], {}}, simulated{"simulated", kColours[1], {}};
  const std::string unit = header_.item_unit;
  for (const Step& s : steps_) {
    train.points.emplace_back(double(s.step), s.loss);
    measured.points.emplace_back(double(s.step), s.items_per_s);
    if (s.sim_items_per_s > 0) simulated.points.emplace_back(double(s.step), s.sim_items_per_s);
  }
  for (const auto& [step, loss] : evaluations_) validation.points.emplace_back(double(step), loss);
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dlf: " + escape(header_.model) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:60em}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
      "text-align:right}td:first-child,th:first-child{text-align:left}</style></head>\n<body>\n";
  html += "<h1>" + escape(header_.model) + "</h1>\n<table>";
  const std::pair<const char*, std::string> facts[] = {
      {"parameters", number(double(header_.parameters) / 1e6, "%.2fM")},
      {"layout", header_.layout},
      {"device", header_.device},
      {"flags", header_.flags},
      {"steps", std::to_string(steps_.size())}};
  for (const auto& [what, value] : facts)
    html += "<tr><th>" + std::string(what) + "</th><td>" + escape(value) + "</td></tr>";
  html += "</table>\n<h2>Loss</h2>\n" + line_chart("Loss", "step", "loss", {train, validation});
  html += "<h2>Throughput</h2>\n" +
          line_chart("Throughput", "step", unit + " per second", {measured, simulated});
  if (profiled_) {
    html += "<h2>Memory</h2>\n" + memory_chart(profiled_->memory);
    html += "<h2>Ops of the profiled step</h2>\n<p>" +
            number(profiled_->outermost.seconds * 1e3, "%.2f") + " ms in " +
            std::to_string(profiled_->outermost.calls) + " ops (" +
            (header_.device == "cpu" ? "wall clock" : "simulated clock") +
            "), the 25 with the most self time:</p>\n" +
            op_table(profiled_->ops, profiled_->outermost);
  }
  html += kRenderCheck;
  html += "</body></html>\n";
  replace_file(path, "report", html);
}

}  // namespace dlf::train
