// vLLM's KV-cache memory per rank from `gpu_memory_utilization`, derived the way its GPU
// worker does it (v1 `Worker.determine_available_memory`, vLLM 0.11 to 0.15): the share of the
// GPU's total memory vLLM may use, less this rank's weights, less the peak that the profile
// run (a dummy forward of max_num_batched_tokens tokens, then the sampler over
// min(max_num_seqs, tokens) rows of logits) adds to torch's allocator, less the memory outside
// torch that grew since start-up (cuBLAS and attention workspaces, NCCL and custom all-reduce
// buffers). CUDA graphs are captured after the KV cache is allocated in these versions, so
// they are not subtracted. vLLM then sizes the cache as kv // (page bytes · layers).
//
// Weights per rank: every parameter at the model dtype, split over TP; quantized (fp8)
// checkpoints keep the embedding and LM head in 16 bits, and what their ignore list names
// (`num_params_16bit`); with expert parallelism the routed experts are split over EP ranks
// instead of TP. Every rank also holds the rotary embedding's cos/sin cache, which vLLM builds
// at load for all of config.json's max_position_embeddings (whatever max_model_len is served)
// × the rotated dims, in 16 bits: 2.5 GiB for Llama-4-Scout's 10M positions, 32 MiB for a
// 128K Llama-3.1. The activation peak is the larger of the
// forward's (the MLP's gate/up and activation outputs, the QKV output and a few hidden-size
// buffers, 16-bit) and the sampler's (fp32 logits and probabilities).
#pragma once

#include <cstdint>

#include "core/model_spec.h"

namespace kvsim {

struct MemoryBudgetInputs {
  int64_t total_bytes = 0;        // the GPU's memory as the driver reports it (cudaMemGetInfo)
  double gpu_memory_utilization = 0.9;
  int64_t tp = 1;
  int64_t ep = 1;                 // > 1: routed experts split over EP ranks
  int64_t max_num_batched_tokens = 2048;
  int64_t max_num_seqs = 128;
  int64_t non_torch_bytes = 0;    // memory outside torch's allocator that grows after start-up
};

struct MemoryBudget {
  int64_t requested = 0;    // gpu_memory_utilization × total
  int64_t weights = 0;      // this rank's parameters
  int64_t rope_cache = 0;   // the rotary embedding's cos/sin buffer (loaded with the weights)
  int64_t activations = 0;  // the profile run's peak
  int64_t non_torch = 0;
  int64_t kv = 0;           // what is left for the KV cache (≤ 0: nothing)
};

// The budget of one rank. A model without compute numbers (num_params 0) has no weights.
MemoryBudget VllmKvMemoryBudget(const ModelSpec& model, const MemoryBudgetInputs& in);

}  // namespace kvsim
