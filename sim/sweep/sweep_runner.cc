#include "sim/sweep/sweep_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "sim/config/config_reader.h"
#include "sim/csv.h"
#include "sim/run/replicates.h"
#include "sim/output_file.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

uint64_t Fnv1a(const std::string& s) {  // the journal's fingerprint
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string JoinCsv(const std::vector<std::string>& fields) {
  std::string s;
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? "," : "") + CsvField(fields[i]);
  return s;
}

// The fields of one CSV line (CsvField's quoting undone).
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// The point index of a CSV row (its first field), or -1.
int64_t RowIndex(const std::string& row) {
  const auto comma = row.find(',');
  const std::string f = row.substr(0, comma);
  char* end = nullptr;
  const long long v = std::strtoll(f.c_str(), &end, 10);
  return (!f.empty() && *end == '\0' && v >= 0) ? v : -1;
}

}  // namespace

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "RequestStop runs in signal handlers");
}  // namespace

RowSchema SweepRowSchema(const std::vector<SweepPoint>& points, int64_t seeds) {
  std::vector<const SimulationKind*> kinds;
  kinds.reserve(points.size());
  for (const SweepPoint& p : points) kinds.push_back(KindOfPoint(p.tree));
  RowSchema schema = RowSchemaFor(kinds, seeds);
  // An axis written with units ("16GiB") also gets its value in bytes, for plotting tools.
  const size_t axes = points.empty() ? 0 : points.front().labels.size();
  for (size_t i = 0; i < axes; ++i) {
    const bool valued = std::any_of(points.begin(), points.end(), [&](const SweepPoint& p) {
      const std::string& v = p.labels[i].second;
      return !v.empty() && std::isalpha(static_cast<unsigned char>(v.back())) != 0 &&
             ParseByteCount(v).has_value();
    });
    if (valued) schema.valued_labels.push_back(i);
  }
  return schema;
}

std::string SweepCsvHeader(const std::vector<std::string>& keys, const RowSchema& schema) {
  std::vector<std::string> header = {"point"};
  header.insert(header.end(), keys.begin(), keys.end());
  for (size_t i : schema.valued_labels) header.push_back(keys[i] + ".value");
  header.push_back("status");
  if (schema.with_kind) header.push_back("kind");
  header.insert(header.end(), schema.columns.begin(), schema.columns.end());
  header.push_back("sweep_id");
  header.push_back("sweep_points");
  return JoinCsv(header);
}

std::string SweepCsvRow(const PointResult& r, const RowSchema& schema, const SweepIdentity& sweep) {
  std::vector<std::string> fields = {std::to_string(r.index)};
  for (const auto& [k, v] : r.labels) fields.push_back(v);
  for (size_t i : schema.valued_labels) {
    const std::optional<int64_t> bytes = ParseByteCount(r.labels[i].second);
    fields.push_back(bytes ? std::to_string(*bytes) : "");
  }
  std::vector<std::string> row = RowFields(r, schema);
  if (r.status.ok()) {
    fields.push_back("ok");
  } else {
    std::string msg = r.status.message();
    for (char& c : msg) {
      if (c == '\n') c = ' ';
    }
    fields.push_back("error: " + msg);
    // A failed point measured nothing (even if it ran: an output was not written).
    for (size_t i = schema.with_kind ? 1 : 0; i < row.size(); ++i) row[i].clear();
  }
  fields.insert(fields.end(), row.begin(), row.end());
  fields.push_back(sweep.id);
  fields.push_back(std::to_string(sweep.points));
  return JoinCsv(fields);
}

void RequestStop() { g_stop.store(true); }
bool StopRequested() { return g_stop.load(); }
void ClearStopRequest() { g_stop.store(false); }

std::string ReplicatePath(const std::string& path, int64_t seed) {
  if (path.empty()) return path;
  const fs::path p(path);
  return (p.parent_path() / fmt::format("{}.seed-{}{}", p.stem().string(), seed,
                                        p.extension().string()))
      .string();
}

void RunPoints(const std::vector<SweepPoint>& points, const std::string& source, int jobs,
               int64_t seeds, const std::function<PointOptions(const SweepPoint&)>& options,
               const std::function<void(PointResult&&)>& done) {
  // Work items are (point, replicate); a point is done when all its replicates are.
  struct Pending {
    std::vector<PointResult> reps;
    std::vector<int64_t> seeds;
    int64_t left = 0;
  };
  std::vector<Pending> pending(points.size());
  std::vector<std::pair<size_t, int64_t>> items;  // (point, replicate)
  std::vector<PointResult> bad_seed;              // points whose `seed` is not a number
  for (size_t i = 0; i < points.size(); ++i) {
    if (seeds <= 1) {
      items.emplace_back(i, 0);
      continue;
    }
    auto base = BaseSeed(points[i].tree);
    if (!base.ok()) {
      PointResult r;
      r.index = points[i].index;
      r.labels = points[i].labels;
      r.kind = KindOfPoint(points[i].tree);
      r.status = base.status();
      bad_seed.push_back(std::move(r));
      continue;
    }
    pending[i].reps.resize(static_cast<size_t>(seeds));
    pending[i].left = seeds;
    for (int64_t k = 0; k < seeds; ++k) {
      pending[i].seeds.push_back(base.value() + k);
      items.emplace_back(i, k);
    }
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  for (PointResult& r : bad_seed) done(std::move(r));
  auto worker = [&] {
    while (!StopRequested()) {
      const size_t w = next.fetch_add(1);
      if (w >= items.size()) return;
      const auto [i, k] = items[w];
      const SweepPoint& p = points[i];
      if (seeds <= 1) {
        PointResult r = RunPoint(p.index, p.labels, p.tree, source, options(p));
        std::lock_guard<std::mutex> lock(mu);
        done(std::move(r));
        continue;
      }
      const int64_t seed = pending[i].seeds[static_cast<size_t>(k)];
      PointOptions po = options(p);
      if (!po.out_dir.empty()) po.out_dir = (fs::path(po.out_dir) / fmt::format("seed-{}", seed)).string();
      po.trace_path = ReplicatePath(po.trace_path, seed);
      po.step_log_path = ReplicatePath(po.step_log_path, seed);
      PointResult r = RunPoint(p.index, p.labels, ReplicateTree(p.tree, seed), source, po);
      std::lock_guard<std::mutex> lock(mu);
      Pending& pend = pending[i];
      pend.reps[static_cast<size_t>(k)] = std::move(r);
      if (--pend.left == 0) {
        done(CombineReplicates(std::move(pend.reps), pend.seeds));
        pend.reps.clear();
      }
    }
  };
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(std::max<size_t>(items.size(), 1))));
  if (jobs == 1) {
    worker();
    return;
  }
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
}

std::string SweepCsvPath(const SweepOptions& o) {
  if (o.shard_n <= 1) return (fs::path(o.out_dir) / "sweep.csv").string();
  return (fs::path(o.out_dir) / fmt::format("sweep.shard-{}-of-{}.csv", o.shard_k, o.shard_n))
      .string();
}

namespace {

// A non-negative integer from Slurm's environment, or -1 when unset or not a number.
int64_t SlurmNumber(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return (*end == '\0' && x >= 0 && x < (1LL << 31)) ? x : -1;
}

// Holds an exclusive flock on a file for as long as it lives.
class FileLock {
 public:
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  Status Acquire(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::Error("io_error", path + ": cannot open the lock file");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      return Status::Error("shard_busy", path + ": another kvsim process is running this "
                                                "sweep (or shard) into the same directory");
    }
    return Status::Ok();
  }

 private:
  int fd_ = -1;
};

}  // namespace

Status ParseShard(const std::string& spec, const std::function<const char*(const char*)>& getenv,
                  int* shard_k, int* shard_n) {
  if (spec == "slurm" || spec.rfind("slurm/", 0) == 0) {
    const int64_t id = SlurmNumber(getenv, "SLURM_ARRAY_TASK_ID");
    // N from the command line (slurm/N) or from KVSIM_SHARDS, which scripts/slurm/submit.sh
    // exports: a rerun of some tasks (sbatch --array=2) is an array of 1 task, so the
    // array's own size says nothing about the sweep's shards.
    std::string n_text = spec == "slurm" ? "" : spec.substr(6);
    std::string n_from = "--shard " + spec;
    if (n_text.empty()) {
      const char* env = getenv("KVSIM_SHARDS");
      if (env != nullptr && *env != '\0') {
        n_text = env;
        n_from = "KVSIM_SHARDS";
      }
    }
    if (!n_text.empty()) {
      int n = -1;
      char extra = 0;
      if (std::sscanf(n_text.c_str(), "%d%c", &n, &extra) != 1 || n < 1) {
        return Status::Error("bad_shard", n_from + ": the number of shards must be a positive "
                                                   "integer, got '" + n_text + "'");
      }
      if (id < 0) {
        return Status::Error("bad_shard", "--shard " + spec +
                                              ": SLURM_ARRAY_TASK_ID must be set (run it as a "
                                              "task of an sbatch --array job)");
      }
      // Task id mod N: --array=0-(N-1) and --array=1-N both give every shard once, and a
      // rerun of task T (--array=T) runs the same shard T did.
      *shard_k = static_cast<int>(id % n);
      *shard_n = n;
      return Status::Ok();
    }
    const int64_t lo = SlurmNumber(getenv, "SLURM_ARRAY_TASK_MIN");
    const int64_t hi = SlurmNumber(getenv, "SLURM_ARRAY_TASK_MAX");
    const int64_t count = SlurmNumber(getenv, "SLURM_ARRAY_TASK_COUNT");
    int64_t step = SlurmNumber(getenv, "SLURM_ARRAY_TASK_STEP");
    if (step < 1) step = 1;
    if (id < 0 || lo < 0 || hi < lo || count < 1) {
      return Status::Error("bad_shard",
                           "--shard slurm: SLURM_ARRAY_TASK_ID, _MIN, _MAX and _COUNT must be "
                           "set (run it as a task of an sbatch --array job)");
    }
    // A list such as --array=0,3,7 has no single step: shard numbers would have gaps.
    if ((hi - lo) % step != 0 || (hi - lo) / step + 1 != count || (id - lo) % step != 0 ||
        id > hi || id < lo) {
      return Status::Error(
          "bad_shard", fmt::format("--shard slurm: array task {} of {}-{} step {} with {} tasks "
                                   "is not an evenly spaced range; use --array=A-B[:S], or give "
                                   "the number of shards (--shard slurm/N or KVSIM_SHARDS=N)",
                                   id, lo, hi, step, count));
    }
    *shard_k = static_cast<int>((id - lo) / step);
    *shard_n = static_cast<int>(count);
    return Status::Ok();
  }
  int k = -1, n = -1;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "%d/%d%c", &k, &n, &extra) != 2 || n < 1 || k < 0 || k >= n) {
    return Status::Error("bad_shard",
                         "--shard " + spec + ": expected K/N with 0 <= K < N, or slurm");
  }
  *shard_k = k;
  *shard_n = n;
  return Status::Ok();
}

Status RunSweep(const ConfigNode& tree, const std::string& source, const SweepOptions& o,
                std::ostream& log, SweepTally* tally_out) {
  if (o.shard_n < 1 || o.shard_k < 0 || o.shard_k >= o.shard_n) {
    return Status::Error("bad_shard", fmt::format("--shard {}/{}: need 0 <= K < N", o.shard_k,
                                                  o.shard_n));
  }
  auto keys = SweepKeys(tree);
  if (!keys.ok()) return keys.status();
  auto all = ExpandSweep(tree);
  if (!all.ok()) return all.status();
  // Point 0's scenario must parse (a typo stops the sweep before anything runs). The columns
  // come from every point's kind, so every shard writes the same header and they merge.
  auto first = ParseScenario(all->front().tree, source);
  if (!first.ok()) return first.status();
  auto seeds = SweepSeeds(tree);
  if (!seeds.ok()) return seeds.status();
  const RowSchema schema = SweepRowSchema(all.value(), seeds.value());
  SweepTally tally;
  {
    std::vector<const SimulationKind*> seen;
    for (const SweepPoint& p : all.value()) {
      const SimulationKind* k = KindOfPoint(p.tree);
      if (k && std::find(seen.begin(), seen.end(), k) == seen.end()) {
        seen.push_back(k);
        tally.kinds.push_back(k->name);
      }
    }
  }
  std::vector<SweepPoint> mine;
  for (auto& p : all.value()) {
    if (p.index % o.shard_n == o.shard_k) mine.push_back(std::move(p));
  }
  const SweepIdentity identity = IdentifySweep(tree, static_cast<int64_t>(all->size()));
  const std::string header_line = SweepCsvHeader(keys.value(), schema) + "\n";
  const size_t status_field = 1 + keys->size() + schema.valued_labels.size();

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::Error("io_error", o.out_dir + ": cannot create: " + ec.message());
  const std::string csv = SweepCsvPath(o);
  const std::string journal = csv + ".journal";
  const std::string fingerprint = fmt::format(
      "# kvsim sweep journal {:016x} shard {}/{}\n", Fnv1a(ToYaml(tree)), o.shard_k, o.shard_n);
  FileLock lock;
  if (Status s = lock.Acquire(csv + ".lock"); !s.ok()) return s;

  std::map<int64_t, std::string> rows;
  // A finished CSV of this sweep (a rerun of a finished shard): its points are done. A CSV
  // of another sweep is not overwritten without --force.
  if (fs::exists(csv) && !o.force) {
    std::ifstream f(csv, std::ios::binary);
    std::string line;
    std::getline(f, line);
    bool same = line + "\n" == header_line;
    std::map<int64_t, std::string> done;
    const std::string tail = "," + identity.id + "," + std::to_string(identity.points);
    while (same && std::getline(f, line)) {
      if (line.empty()) continue;
      same = line.size() > tail.size() &&
             line.compare(line.size() - tail.size(), tail.size(), tail) == 0 && RowIndex(line) >= 0;
      if (same) done[RowIndex(line)] = line;
    }
    if (!same) {
      return Status::Error("sweep_exists",
                           csv + ": holds the results of another sweep (scenario, overrides or "
                                 "columns differ); use another -o, or --force to replace it");
    }
    log << fmt::format("sweep: {} of {} points already in {}\n", done.size(), mine.size(), csv);
    rows = std::move(done);
  }
  // Resume: rows already in the journal (complete lines only).
  if (fs::exists(journal)) {
    std::ifstream f(journal, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    const size_t last_nl = text.rfind('\n');
    const size_t keep = last_nl == std::string::npos ? 0 : last_nl + 1;
    if (keep < text.size()) {
      log << "sweep: dropping a torn last line from " << journal << "\n";
      text.resize(keep);
      fs::resize_file(journal, keep, ec);
    }
    if (text.rfind(fingerprint + header_line, 0) != 0) {
      return Status::Error("journal_mismatch",
                           journal + ": this journal belongs to a different sweep (scenario, "
                                     "shard or columns changed); delete it or use another -o");
    }
    std::istringstream in(text.substr(fingerprint.size() + header_line.size()));
    std::string line;
    while (std::getline(in, line)) {
      const int64_t idx = RowIndex(line);
      if (idx >= 0) rows[idx] = line;
    }
    log << fmt::format("sweep: resuming, {} of {} points already done\n", rows.size(),
                       mine.size());
  } else {
    std::ofstream f(journal, std::ios::binary);
    f << fingerprint << header_line;
    if (!f) return Status::Error("io_error", journal + ": cannot write");
  }

  std::vector<SweepPoint> todo;
  for (auto& p : mine) {
    if (!rows.count(p.index)) todo.push_back(std::move(p));
  }
  const bool partial = o.max_points > 0 && static_cast<int64_t>(todo.size()) > o.max_points;
  if (partial) todo.resize(static_cast<size_t>(o.max_points));
  const int fd = ::open(journal.c_str(), O_WRONLY | O_APPEND);
  if (fd < 0) return Status::Error("io_error", journal + ": cannot open for appending");
  const auto t0 = std::chrono::steady_clock::now();
  size_t finished = 0;
  Status io;
  const size_t total = todo.size();
  RunPoints(
      todo, source, o.jobs, seeds.value(),
      [&](const SweepPoint& p) {
        PointOptions po;
        if (o.per_point_outputs) {
          po.out_dir = (fs::path(o.out_dir) / "points" / fmt::format("{:04d}", p.index)).string();
        }
        return po;
      },
      [&](PointResult&& r) {
        const std::string line = SweepCsvRow(r, schema, identity) + "\n";
        if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
            ::fsync(fd) != 0) {
          io = Status::Error("io_error", journal + ": append failed");
        }
        rows[r.index] = line.substr(0, line.size() - 1);
        ++finished;
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double eta = finished > 0 ? el / static_cast<double>(finished) *
                                              static_cast<double>(total - finished)
                                        : 0;
        if (o.progress_bar) {
          const int width = 30;
          const int fill = total ? static_cast<int>(width * finished / total) : width;
          log << fmt::format("\r[{}{}] {}/{} points  elapsed {}  ETA {}   ",
                             std::string(static_cast<size_t>(fill), '#'),
                             std::string(static_cast<size_t>(width - fill), '.'), finished,
                             total, FormatDuration(el), FormatDuration(eta))
              << std::flush;
        } else {
          log << fmt::format("sweep: point {} done ({}/{}) {} [{}] {:.1f}s, ETA {}\n", r.index,
                             finished, total, r.status.ok() ? "ok" : "error",
                             LabelOf(r.labels), r.wall_s,
                             FormatDuration(eta));
        }
      });
  ::close(fd);
  if (o.progress_bar && total > 0) log << "\n";
  if (!io.ok()) return io;
  if (StopRequested()) {
    const std::string msg = fmt::format(
        "interrupted: {} of {} points done and kept in {}; rerun the same command to continue",
        rows.size(), mine.size(), journal);
    log << "sweep: " << msg << "\n";
    return Status::Error("interrupted", msg);
  }
  // Failed points, resumed rows included: their status field starts with "error".
  tally.points = static_cast<int64_t>(rows.size());
  for (const auto& [idx, line] : rows) {
    const std::vector<std::string> f = SplitCsv(line);
    if (f.size() <= status_field || f[status_field] != "ok") tally.failed.push_back(idx);
  }
  std::string failed_note;
  if (!tally.failed.empty()) {
    failed_note = fmt::format(", {} FAILED (point", tally.failed.size());
    failed_note += tally.failed.size() > 1 ? "s" : "";
    for (size_t i = 0; i < tally.failed.size() && i < 20; ++i) {
      failed_note += " " + std::to_string(tally.failed[i]);
    }
    failed_note += tally.failed.size() > 20 ? " ...; " : "; ";
    failed_note += "the status column says why)";
  }
  if (partial) {
    log << fmt::format(
        "sweep: stopped after {} points (--max-points); {} of {} done{}; rerun to continue\n",
        total, rows.size(), mine.size(), failed_note);
    if (tally_out) *tally_out = tally;
    return Status::Ok();
  }
  std::string out = header_line;
  for (const auto& [idx, line] : rows) out += line + "\n";
  if (Status s = WriteFileAtomically(csv, out); !s.ok()) return s;
  fs::remove(journal, ec);
  tally.complete = true;
  log << fmt::format("sweep: {} points{} -> {}\n", rows.size(), failed_note, csv);
  if (tally_out) *tally_out = tally;
  return Status::Ok();
}

Status MergeSweepCsvs(const std::vector<std::string>& inputs, const std::string& out,
                      std::ostream& log, bool allow_missing) {
  if (inputs.empty()) return Status::Error("bad_args", "merge: no input CSVs");
  std::string header;
  size_t id_field = 0;  // the sweep_id column (sweep_points follows it)
  std::string sweep_id, first_file;
  int64_t sweep_points = -1;
  std::map<int64_t, std::string> rows;
  for (const auto& in : inputs) {
    std::ifstream f(in, std::ios::binary);
    if (!f) return Status::Error("missing_file", in + ": cannot read: " + std::strerror(errno));
    std::string line;
    int64_t lineno = 0;
    while (std::getline(f, line)) {
      ++lineno;
      if (lineno == 1) {
        if (header.empty()) {
          header = line;
          const std::vector<std::string> cols = SplitCsv(line);
          const auto it = std::find(cols.begin(), cols.end(), "sweep_id");
          if (it == cols.end() || it + 1 == cols.end() || *(it + 1) != "sweep_points") {
            return Status::Error("bad_merge", in + ": no sweep_id/sweep_points columns; not a "
                                                   "CSV written by kvsim sweep");
          }
          id_field = static_cast<size_t>(it - cols.begin());
        }
        if (line != header) {
          return Status::Error("foreign_shard",
                               in + ": header differs from " + inputs[0] +
                                   "'s; shards of one sweep share their columns");
        }
        continue;
      }
      if (line.empty()) continue;
      const int64_t idx = RowIndex(line);
      const std::vector<std::string> fields = SplitCsv(line);
      if (idx < 0 || fields.size() != id_field + 2) {
        return Status::Error("bad_merge", fmt::format("{}:{}: not a sweep row", in, lineno));
      }
      char* end = nullptr;
      const long long points = std::strtoll(fields[id_field + 1].c_str(), &end, 10);
      if (sweep_id.empty()) {
        sweep_id = fields[id_field];
        sweep_points = points;
        first_file = in;
      }
      if (fields[id_field] != sweep_id || points != sweep_points) {
        return Status::Error(
            "foreign_shard",
            fmt::format("{}:{}: row of sweep {} ({} points), but {} holds sweep {} ({} points); "
                        "these shards come from different sweeps (scenario or --set differ)",
                        in, lineno, fields[id_field], points, first_file, sweep_id,
                        sweep_points));
      }
      if (idx >= sweep_points) {
        return Status::Error("bad_merge", fmt::format("{}:{}: point {} is beyond the sweep's {} "
                                                      "points",
                                                      in, lineno, idx, sweep_points));
      }
      auto [it, inserted] = rows.emplace(idx, line);
      if (!inserted && it->second != line) {
        return Status::Error("bad_merge", fmt::format("{}:{}: point {} appears twice with "
                                                      "different results",
                                                      in, lineno, idx));
      }
    }
  }
  std::vector<int64_t> missing;
  for (int64_t i = 0; i < std::max<int64_t>(sweep_points, 0); ++i) {
    if (!rows.count(i)) missing.push_back(i);
  }
  if (sweep_points < 0) missing.push_back(0);  // no rows at all
  if (!missing.empty()) {
    std::string m;
    for (size_t i = 0; i < missing.size() && i < 20; ++i) m += " " + std::to_string(missing[i]);
    const std::string what =
        sweep_points < 0 ? std::string("no rows in the input CSVs")
                         : fmt::format("{} of {} point(s) missing:{}{}", missing.size(),
                                       sweep_points, m, missing.size() > 20 ? " ..." : "");
    if (!allow_missing) {
      return Status::Error("missing_points",
                           "merge: " + what + " (a shard failed or has not run; rerun it, or "
                                              "--allow-missing to write the rest)");
    }
    log << "merge: warning: " << what << "\n";
  }
  std::string text = header + "\n";
  for (const auto& [idx, line] : rows) text += line + "\n";
  if (Status s = WriteFileAtomically(out, text); !s.ok()) return s;
  log << fmt::format("merge: {} rows from {} file(s) -> {}\n", rows.size(), inputs.size(), out);
  return Status::Ok();
}

}  // namespace kvsim
