#!/usr/bin/env bash
# The README shows only commands that run. Each `dlf ...` line of its ```sh blocks (a trailing
# `\` continues it; bash drops its `# comment`) runs as written, with this build's dlf first on
# PATH, in README order in one empty directory, so a command that reads what an earlier one
# wrote (eval after train, on the same --checkpoint) finds it. A command that fails fails the
# test with its output: a flag the README uses that was renamed or removed is caught here.
#
# The README's examples are quick by design (gpt-nano, a few hundred steps): they run verbatim,
# nothing is rewritten, and one that takes longer than README_TEST_TIMEOUT seconds (default 300)
# fails the test, saying the examples must stay quick.
#
# Also checked: every command `dlf --help` lists has an example; the binary is where the README
# says; and the README's C++ program is apps/examples/embed/main.cpp, which embed_test.sh builds
# and runs.
#
#   readme_test.sh PATH/TO/dlf PATH/TO/README.md
set -euo pipefail
dlf=$(realpath "$1") readme=$(realpath "$2")
src=$(dirname "$readme")
limit=${README_TEST_TIMEOUT:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The commands, one a line (continuations joined with their newlines kept).
commands=()
while IFS= read -r -d '' command; do commands+=("$command"); done < <(awk '
  /^```/ { in_sh = ($0 == "```sh"); next }
  in_sh && (continued || /^dlf /) {
    command = command $0 "\n"
    continued = /\\$/
    if (!continued) { printf "%s%c", command, 0; command = "" }
  }' "$readme")
[ ${#commands[@]} -gt 0 ] || fail "no dlf command in the sh blocks of $readme"

# Every command of `dlf --help` has an example.
for sub in $("$dlf" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }'); do
  [ "$sub" = help ] && continue
  printf '%s\n' "${commands[@]}" | grep -q "^dlf $sub " || fail "the README shows no 'dlf $sub' command"
done

# The binary is where the README says it is.
[[ $dlf == */apps/dlf ]] || fail "the binary is $dlf, not .../apps/dlf"
grep -q 'build/release/apps/dlf' "$readme" || fail "the README does not say the binary is build/release/apps/dlf"

# The README's C++ program is the example the test suite builds and runs.
awk '/^```cpp$/ { on = 1; next } /^```$/ && on { exit } on' "$readme" >"$tmp/readme.cpp"
diff -u "$src/apps/examples/embed/main.cpp" "$tmp/readme.cpp" >"$tmp/diff" ||
  fail "the README's C++ program is not apps/examples/embed/main.cpp: $(cat "$tmp/diff")"

mkdir "$tmp/bin" "$tmp/work"
ln -s "$dlf" "$tmp/bin/dlf"
cd "$tmp/work"
# dlf bench runs the build's benchmark programs: a build without them (the ASan preset's,
# DLF_BUILD_BENCH off) skips its commands, and says so.
skipped=0
[ -x "$(dirname "$(dirname "$dlf")")/bench/suite_bench" ] || bench_missing=1
for command in "${commands[@]}"; do
  if [ -n "${bench_missing:-}" ] && [[ $command == "dlf bench "* ]]; then
    skipped=$((skipped + 1))
    continue
  fi
  code=0
  PATH="$tmp/bin:$PATH" timeout "$limit" bash -c "$command" >"$tmp/out" 2>&1 </dev/null || code=$?
  [ "$code" -ne 124 ] || fail "took over ${limit} s (the README's examples must stay quick): $command"
  [ "$code" -eq 0 ] || fail "exit $code: ${command}$(tail -n 40 "$tmp/out")"
done
echo "ok: $((${#commands[@]} - skipped)) README commands ran${bench_missing:+, $skipped of dlf bench skipped (no benchmarks in this build)}"
