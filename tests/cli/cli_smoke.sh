#!/usr/bin/env bash
# The CLI as a newcomer runs it: every shipped scenario plans, every class of bad input exits
# with code 2 and a message naming file, line and key, --json errors are JSON objects, and
# `kvsim layout --json` carries the fields scripts read.
# Usage: cli_smoke.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check NAME EXPECTED_RC CMD...

# bad NAME "FRAGMENT|FRAGMENT..." CMD...   exit 2, stderr names every fragment, no crash text
bad() {
  local name=$1 frags=$2; shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 2 ]; then
    echo "FAIL $name: exit $rc, expected 2"; echo "$err" | head -10; fail=1; return
  fi
  local IFS='|'
  for f in $frags; do
    if ! grep -qF -- "$f" <<<"$err"; then
      echo "FAIL $name: message lacks \"$f\""; echo "$err" | head -10; fail=1; return
    fi
  done
  if grep -qiE 'terminate|abort|segmentation|KVSIM_CHECK|what\(\)' <<<"$err"; then
    echo "FAIL $name: crashed"; echo "$err" | head -10; fail=1; return
  fi
  echo "ok   $name: $(head -1 <<<"$err")"
}

# json_ok NAME PYTHON_ASSERTIONS CMD...   stdout is one JSON object j satisfying the asserts
json_ok() {
  local name=$1 expr=$2; shift 2
  local out rc
  out=$("$@" 2>/dev/null); rc=$?
  if ! python3 -c "
import json, sys
j = json.loads(sys.stdin.read())
$expr
" <<<"$out"; then
    echo "FAIL $name (exit $rc)"; echo "$out" | head -20; fail=1
  else
    echo "ok   $name"
  fi
}

# --- Good input ----------------------------------------------------------------------------
check "layout default" 0 "$kvsim" layout
check "run default" 0 "$kvsim" run
check "list" 0 "$kvsim" list
for f in "$root"/scenarios/*.yaml; do
  check "layout $(basename "$f")" 0 "$kvsim" layout "$f"
  check "layout --json $(basename "$f")" 0 "$kvsim" layout --json "$f"
done
out=$("$kvsim" layout 2>&1)
for want in "attention block:" "groups (" "tensors (" "num_blocks:" "padding:" "page layouts" \
            "conv " "ssm "; do
  grep -qF "$want" <<<"$out" || { echo "FAIL layout text lacks \"$want\""; fail=1; }
done

json_ok "layout --json fields" '
assert isinstance(j["attn_block_size"], int) and j["attn_block_size"] > 0
assert isinstance(j["num_blocks"], int) and j["num_blocks"] > 1
assert isinstance(j["groups"], list) and j["groups"]
for g in j["groups"]:
    for k in ("kind", "layers", "block_size", "page_bytes", "real_page_bytes"):
        assert k in g, k
    assert isinstance(g["layers"], list) and g["layers"]
    assert g["real_page_bytes"] <= g["page_bytes"]
' "$kvsim" layout --json

json_ok "397B TP2 pack 4 → 528" '
assert j["attn_block_size"] == 528, j["attn_block_size"]
assert j["attn_pack_size"] == 4
' "$kvsim" layout --model qwen3.5-397b-a17b --tp 2 --attn-pack-size 4 --json

for tp_block in "1 2096" "2 2096" "4 1056" "8 528"; do
  set -- $tp_block
  json_ok "397B TP$1 → $2" "assert j['attn_block_size'] == $2, j['attn_block_size']" \
    "$kvsim" layout --model qwen3.5-397b-a17b --tp "$1" --json
done
json_ok "Qwen3-Next TP4 → 272" "assert j['attn_block_size'] == 272" \
  "$kvsim" layout --model qwen3-next-80b-a3b --tp 4 --json
json_ok "MiMo TP4 pads the draft 8192 → 12288" '
d = [g for g in j["groups"] if any(n.startswith("D") for n in g["layers"])]
assert d and d[0]["real_page_bytes"] == 8192 and d[0]["page_bytes"] == 12288, d
' "$kvsim" layout --model mimo-style --tp 4 --json
json_ok "--kv-dtype fp8 on the 397B → 4176" "assert j['attn_block_size'] == 4176" \
  "$kvsim" layout --model qwen3.5-397b-a17b --tp 2 --kv-dtype fp8 --json

# --- Bad input: exit 2, a message naming file:line and key ---------------------------------
cat >"$tmp/typo.yaml" <<'EOF'
name: typo
model:
  preset: llama-3.1-8b
cache:
  kv_memory_bytes: 8GiB
  attn_pack_size: 1
  blok_size: 16
EOF
bad "unknown key" "typo.yaml:7|cache.blok_size|did you mean cache.block_size" \
  "$kvsim" layout "$tmp/typo.yaml"
printf 'model: {preset: llama-3.1-8b\ncache: [\n' >"$tmp/broken.yaml"
bad "malformed YAML" "broken.yaml:|malformed YAML" "$kvsim" layout "$tmp/broken.yaml"
printf 'model:\n  preset: llama-3.1-8b\ncache:\n  block_size: 16\n  block_size: 32\n' >"$tmp/dup.yaml"
bad "duplicate key" "dup.yaml:5|cache.block_size|duplicate key" "$kvsim" layout "$tmp/dup.yaml"
printf 'model: {preset: llama-3.1-8b}\nparallel:\n  tp: two\n' >"$tmp/type.yaml"
bad "wrong type" "type.yaml:3|parallel.tp|expected an integer" "$kvsim" layout "$tmp/type.yaml"
printf 'model: {preset: llama-3.1-8b}\nparallel:\n  tp: 0\n' >"$tmp/tp0.yaml"
bad "tp 0" "tp0.yaml:3|parallel.tp|out of range" "$kvsim" layout "$tmp/tp0.yaml"
printf 'model: {preset: llama-3.1-8b}\ncache:\n  kv_memory_bytes: 8GiB\n  block_size: 24\n' \
  >"$tmp/b24.yaml"
bad "block size the backend cannot run" "b24.yaml:4|cache.block_size" \
  "$kvsim" layout "$tmp/b24.yaml"
printf 'model:\n  layers:\n    - {type: sliding_window, num_kv_heads: 8, head_size: 128}\n' \
  >"$tmp/swa.yaml"
bad "window missing" "swa.yaml:3|model.layers[0].sliding_window" "$kvsim" layout "$tmp/swa.yaml"
printf 'model:\n  layers:\n    - type: mamba\n      shapes: [[3, 64], [4, 8]]\n      dtypes: [bf16]\n' \
  >"$tmp/mamba.yaml"
bad "mamba shapes/dtypes" "mamba.yaml:5|model.layers[0].dtypes" "$kvsim" layout "$tmp/mamba.yaml"
printf 'model:\n  preset: qwen3-next-80b-a3b\nparallel:\n  tp: 3\ncache: {kv_memory_bytes: 8GiB}\n' >"$tmp/gdn.yaml"
bad "TP not dividing GDN heads" "gdn.yaml:4|parallel.tp|TP 3" "$kvsim" layout "$tmp/gdn.yaml"
printf 'model:\n  name: empty\n' >"$tmp/empty.yaml"
bad "model with no layers" "empty.yaml:|model.layers|no layers" "$kvsim" layout "$tmp/empty.yaml"
bad "missing file" "nonexistent.yaml|no such" "$kvsim" layout "$tmp/nonexistent.yaml"
printf 'include: gone.yaml\nmodel: {preset: llama-3.1-8b}\n' >"$tmp/inc.yaml"
bad "missing include" "inc.yaml:1|include|gone.yaml" "$kvsim" layout "$tmp/inc.yaml"
printf 'include: c2.yaml\n' >"$tmp/c1.yaml"
printf 'include: c1.yaml\n' >"$tmp/c2.yaml"
bad "include cycle" "c2.yaml:1|include cycle" "$kvsim" layout "$tmp/c1.yaml"
bad "unknown preset" "model.preset|did you mean llama-3.1-8b" "$kvsim" layout --model lama-3.1-8b
bad "bad --set (no =)" "--set cache.block_size|key.path=value" \
  "$kvsim" layout --set cache.block_size
bad "bad --set (type)" "--set cache.block_size|expected an integer" \
  "$kvsim" layout --set cache.block_size=abc
bad "bad --set (key)" "cache.blok_size|did you mean cache.block_size" \
  "$kvsim" layout --set cache.blok_size=16
bad "bad --set (YAML)" "not valid YAML" "$kvsim" layout --set 'cache.block_size=[1'
bad "pack on a dense model" "cache.attn_pack_size|hybrid" \
  "$kvsim" layout --model llama-3.1-8b --attn-pack-size 2
check "unknown flag" 2 "$kvsim" layout --bogus
check "no subcommand" 2 "$kvsim"

# --- models from a Hugging Face config.json --------------------------------------------------
# The config's plan is the preset's: Qwen3-Next at TP 4 packs to the same 272-token block.
json_ok "--hf-config Qwen3-Next TP4 → 272" "assert j['attn_block_size'] == 272" \
  "$kvsim" layout --json --hf-config "$root/scenarios/models/hf/qwen3-next-80b-a3b/config.json" --tp 4
check "--hf-config from the embedded scenarios/" 0 \
  "$kvsim" layout --hf-config scenarios/models/hf/deepseek-v3/config.json
printf '{"architectures": ["FooForCausalLM"]}' > "$tmp/foo.json"
bad "--hf-config unknown architecture" "foo.json|FooForCausalLM|LlamaForCausalLM" \
  "$kvsim" layout --hf-config "$tmp/foo.json"
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}' > "$tmp/part.json"
bad "--hf-config missing key" "part.json: num_attention_heads: missing" \
  "$kvsim" layout --hf-config "$tmp/part.json"
printf 'model: {hf_config: missing.json}\n' > "$tmp/hfmissing.yaml"
bad "hf_config missing file" "hfmissing.yaml:1|model.hf_config|missing.json" \
  "$kvsim" layout "$tmp/hfmissing.yaml"

# --- --json errors: one object {error, message} on stdout, exit 2 ---------------------------
for args in "--set cache.block_size=abc" "$tmp/typo.yaml" "$tmp/gdn.yaml" "--model lama-3.1-8b" \
            "$tmp/nonexistent.yaml"; do
  # shellcheck disable=SC2086
  "$kvsim" layout --json $args >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL --json $args: exit $rc"; fail=1; }
  # shellcheck disable=SC2086
  json_ok "--json error object: $args" '
assert set(j) == {"error", "message"}, j
assert j["error"] and j["message"]
' "$kvsim" layout --json $args
done

exit $fail
