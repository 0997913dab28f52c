#include "sim/run/replicates.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

namespace kvsim {

double StudentT975(int64_t df) {
  if (df < 1) return 0;
  const boost::math::students_t dist(static_cast<double>(df));
  return boost::math::quantile(dist, 0.975);
}

MeanInterval MeanInterval95(std::span<const double> values) {
  MeanInterval r;
  const size_t n = values.size();
  if (n == 0) return r;
  double sum = 0;
  for (double v : values) sum += v;
  r.mean = sum / static_cast<double>(n);
  // Seeds that agree exactly (a block count, a rate no seed changes) have no spread: say so
  // exactly, not as a rounding residue of the mean.
  if (std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; })) {
    r.mean = values[0];
    return r;
  }
  double ss = 0;
  for (double v : values) ss += (v - r.mean) * (v - r.mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  r.half_width = StudentT975(static_cast<int64_t>(n) - 1) * sd / std::sqrt(static_cast<double>(n));
  return r;
}

namespace {

// "in 2 of 5 seeds (3, 5): <the first seed's text>", or "" when no seed has a note.
std::string SeedNote(const std::vector<PointResult>& reps, std::span<const int64_t> seeds,
                     std::string PointResult::*field) {
  std::string first, which;
  size_t count = 0;
  for (size_t i = 0; i < reps.size(); ++i) {
    if ((reps[i].*field).empty()) continue;
    if (first.empty()) first = reps[i].*field;
    which += (count++ ? ", " : "") + std::to_string(seeds[i]);
  }
  if (count == 0) return "";
  if (reps.size() == 1) return first;
  return fmt::format("in {} of {} seeds ({}): {}", count, reps.size(), which, first);
}

}  // namespace

PointResult CombineReplicates(std::vector<PointResult> reps, std::span<const int64_t> seeds) {
  if (reps.size() == 1) return std::move(reps.front());
  PointResult out;
  out.index = reps.front().index;
  out.labels = reps.front().labels;
  for (PointResult& r : reps) {
    if (out.kind == nullptr) out.kind = r.kind;
    out.wall_s += r.wall_s;
    for (KeptOutputs& k : r.kept) out.kept.push_back(std::move(k));
  }
  for (size_t i = 0; i < reps.size(); ++i) {
    if (!reps[i].status.ok()) {
      out.status = Status::Error(reps[i].status.code(), fmt::format("seed {}: {}", seeds[i],
                                                                    reps[i].status.message()));
      return out;
    }
  }
  const PointResult& r0 = reps.front();
  out.workload = r0.workload;
  out.report = r0.report;
  out.rejections = SeedNote(reps, seeds, &PointResult::rejections);
  out.overload = SeedNote(reps, seeds, &PointResult::overload);
  out.metrics.Add("seeds", "count", static_cast<int64_t>(reps.size()));
  for (size_t m = 0; m < r0.metrics.items().size(); ++m) {
    const Metric& first = r0.metrics.items()[m];
    std::vector<double> xs;
    bool same_integer = first.integer();
    for (const PointResult& r : reps) {
      const Metric* x = r.metrics.Find(first.name);
      const double v = x ? x->number() : 0.0;
      xs.push_back(v);
      same_integer = same_integer && x && x->integer() && x->value == first.value;
    }
    const MeanInterval mi = MeanInterval95(xs);
    if (same_integer) {
      out.metrics.Add(first.name, first.unit, std::get<int64_t>(first.value));
    } else {
      out.metrics.Add(first.name, first.unit, mi.mean);
    }
    out.metrics.Add(first.name + kIntervalSuffix, first.unit, mi.half_width);
  }
  // Every seed's full summary, in seed order.
  nlohmann::ordered_json summaries = nlohmann::ordered_json::array();
  for (size_t i = 0; i < reps.size(); ++i) {
    summaries.push_back({{"seed", seeds[i]},
                         {"summary", nlohmann::ordered_json::parse(reps[i].summary_json)}});
  }
  out.summary_json = summaries.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Simulated against measured: the mean over the seeds against the one measurement.
  const bool comparable = std::all_of(reps.begin(), reps.end(), [&](const PointResult& r) {
    if (!r.reference || !r0.reference) return false;
    if (r.reference->rows.size() != r0.reference->rows.size()) return false;
    if (r.reference->stages.size() != r0.reference->stages.size()) return false;
    for (size_t s = 0; s < r.reference->stages.size(); ++s) {
      if (r.reference->stages[s].second.size() != r0.reference->stages[s].second.size())
        return false;
    }
    return true;
  });
  if (comparable) {
    ReferenceComparison ref = *r0.reference;
    auto average = [&](std::vector<MetricComparison>& rows, auto pick) {
      for (size_t k = 0; k < rows.size(); ++k) {
        double sum = 0;
        for (const PointResult& r : reps) sum += pick(*r.reference)[k].simulated;
        rows[k].simulated = sum / static_cast<double>(reps.size());
        rows[k].error =
            rows[k].measured != 0 ? (rows[k].simulated - rows[k].measured) / rows[k].measured : 0;
      }
    };
    average(ref.rows, [](const ReferenceComparison& c) -> const auto& { return c.rows; });
    for (size_t s = 0; s < ref.stages.size(); ++s) {
      average(ref.stages[s].second,
              [s](const ReferenceComparison& c) -> const auto& { return c.stages[s].second; });
    }
    ref.source += fmt::format("{}mean over {} seeds", ref.source.empty() ? "" : "; ", reps.size());
    out.reference = std::move(ref);
  }
  return out;
}

}  // namespace kvsim
