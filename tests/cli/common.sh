# Sourced by the CLI test scripts: the exit-code checks they use. A script sets fail=0,
# calls check as often as it likes and ends with `exit $fail`.
#
# check NAME EXPECTED_RC CMD...   runs CMD and compares its exit code with EXPECTED_RC.
# When the script sets check_bad_input_forbids to a grep pattern, a command expected to exit
# 2 (bad input) also fails the check if its output matches it (say, a results table).

check() {
  local name=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; fail=1
  elif [ "$want" -eq 2 ] && [ -n "${check_bad_input_forbids:-}" ] &&
       echo "$out" | grep -q "$check_bad_input_forbids"; then
    echo "FAIL $name: printed a table on bad input"; fail=1
  else
    echo "ok   $name"
  fi
}

# expect NAME RC "FRAGMENT|FRAGMENT..." CMD...   exit RC, stdout+stderr hold every fragment,
# and nothing that looks like a crash.
expect() {
  local name=$1 want=$2 frags=$3; shift 3
  local out rc
  out=$(timeout 60 "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -10; fail=1; return
  fi
  local IFS='|'
  for f in $frags; do
    if ! grep -qF -- "$f" <<<"$out"; then
      echo "FAIL $name: output lacks \"$f\""; echo "$out" | head -10; fail=1; return
    fi
  done
  if grep -qiE 'terminate called|abort|segmentation|AddressSanitizer|runtime error' <<<"$out"; then
    echo "FAIL $name: crashed"; echo "$out" | head -10; fail=1; return
  fi
  echo "ok   $name"
}
