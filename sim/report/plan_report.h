// Human and JSON renderings of a KV cache plan (what `kvsim layout` prints, and what the
// viewer's Plan panel shows in text form).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/page_planner.h"
#include "sim/scenario_config.h"

namespace kvsim {

std::string FormatPlan(const Scenario& scenario, const KvCachePlan& plan);
nlohmann::json PlanToJson(const Scenario& scenario, const KvCachePlan& plan);

// "1,234,567"
std::string WithCommas(int64_t v);
// "16 KiB", "1.5 GiB"
std::string HumanBytes(double bytes);
// Compact layer list: "L1 L5 L9 … (12 layers)".
std::string LayerList(const KvCachePlan& plan, const std::vector<int>& layers, size_t max_shown);
// "[L,B,H,N,C] = [1,31782,1,1056,1024]  strides (B) ... in physical order"
std::string DescribeLayout(const KvLayout& layout);
// What one block's page of a layer holds, with byte ranges: Mamba "conv 3×6144 bf16 [0,
// 36,864) | ssm ... | padding [...)", attention "K/V [0, 8,192) | padding [8,192, 12,288)"
// or one range per pack member.
std::string DescribePage(const KvCachePlan& plan, int layer);

}  // namespace kvsim
