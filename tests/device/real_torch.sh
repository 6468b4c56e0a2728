#!/usr/bin/env bash
# The check against the real target: a copy of a torch + nvidia-*-cu13 venv (on the lent H200:
# /opt/torch/.venv). Baseline probe, the removal plan, a removal that must fail the probe in a
# private preview while a reader imports torch from the live venv (0 failures; then the same in
# place, where the reader must see some), the --keep-going result per distribution, a harmless
# removal + rollback, and timings against pip uninstall.
# Runs on a CPU machine too, against the end-to-end story venv:
#   VENV=/path/to/story/venv HARMLESS="sglang flash-attn" tests/device/real_torch.sh
# Environment: VENV (default /opt/torch/.venv), VENVTX (default: build/venvtx beside this repo,
# or venvtx on PATH), HARMLESS (packages torch does not need), OUT (where logs go; default $OUT or
# a temp dir), WORK (scratch dir for the copies).
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${VENV:-/opt/torch/.venv}"
VENVTX="${VENVTX:-$repo/build/venvtx}"
[ -x "$VENVTX" ] || VENVTX="$(command -v venvtx || true)"
OUT="${OUT:-$(mktemp -d)}"
WORK="${WORK:-$(mktemp -d)}"
[ -d "$VENV" ] || { echo "real_torch: no venv at $VENV" >&2; exit 2; }
[ -x "$VENVTX" ] || { echo "real_torch: no venvtx binary (set VENVTX)" >&2; exit 2; }
mkdir -p "$OUT" "$WORK"

# Our own tree hash: path, type, mode, size, content hash or link target of everything in
# site-packages and bin, without venvtx's store and lock. A directory's size is left out: it is
# the filesystem's (on a tmpfs it counts the entries, the store's among them).
tree_hash() {
  (cd "$1" && find . \( -path ./.venvtx -o -path ./.lock \) -prune -o -type d -printf '%p %y %m\n' -o \
                    -printf '%p %y %m %s %l\n' |
     LC_ALL=C sort > "$OUT/tree-$2.txt"
   find . \( -path ./.venvtx -o -path ./.lock \) -prune -o -type f -print0 | LC_ALL=C sort -z |
     xargs -0 sha256sum >> "$OUT/tree-$2.txt")
  sha256sum < "$OUT/tree-$2.txt" | cut -c1-16
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
rows=()
failed=0
check() { [ "$1" = "$2" ] || failed=1; }  # a verdict the script exits non-zero on
row() { rows+=("$(printf '%-34s %-10s %s' "$1" "$2" "$3")"); }

a="$WORK/a"; b="$WORK/b"
rm -rf "$a" "$b"
cp -a "$VENV" "$a" && cp -a "$VENV" "$b" || { echo "real_torch: cannot copy $VENV into $WORK" >&2; exit 2; }
vx() { "$VENVTX" --venv "$a" "$@"; }

# 1. Baseline probe, naming the GPUs.
t=$(now); vx --json probe --probe "import torch" > "$OUT/1-probe.json" 2>&1; rc=$?; dt=$(elapsed "$t")
check "$rc" 0
gpus=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(", ".join(g["name"] for g in (r.get("gpus") or [])) or "none")' "$OUT/1-probe.json" 2>/dev/null)
row "baseline probe" "exit $rc" "${dt}s; GPUs: ${gpus:-?}"

# 2. The plan for removing the cu13 libraries.
vx remove 'nvidia-*-cu13' --dry-run > "$OUT/2-plan.txt" 2>&1; rc=$?
row "plan: remove nvidia-*-cu13" "exit $rc" "$(grep -c 'needed by' "$OUT/2-plan.txt") consumer line(s) of lost sonames"

# A reader importing torch from the live venv every READER_EVERY seconds while a command runs;
# each import's exit status goes to $OUT/reader-NAME.txt.
READER_EVERY="${READER_EVERY:-0.2}"
with_reader() {
  local log="$OUT/reader-$1.txt" flag="$WORK/reading"; shift
  : > "$log"; touch "$flag"
  ( while [ -e "$flag" ]; do
      ( "$a/bin/python" -c "import torch" > /dev/null 2>&1; echo $? >> "$log" ) &
      sleep "$READER_EVERY"
    done; wait ) &
  local reader=$!
  "$@"; local rc=$?
  rm -f "$flag"; wait "$reader"
  return $rc
}
failed_reads() { awk '$1 != 0 {f++} END {printf "%d of %d", f, NR}' "$OUT/reader-$1.txt"; }

# 3. The removal that must fail the probe: previewed, the live venv never sees it.
before=$(tree_hash "$a" before)
t=$(now); with_reader preview vx remove 'nvidia-*-cu13' --probe "import torch" > "$OUT/3-remove.txt" 2>&1; rc=$?
dt_fail=$(elapsed "$t"); seen=$(failed_reads preview)
after=$(tree_hash "$a" after-preview)
check "$rc" 3; check "$before" "$after"; check "${seen%% *}" 0
row "remove nvidia-*-cu13 + probe" "exit $rc" "${dt_fail}s; live venv unchanged: $([ "$before" = "$after" ] && echo yes || echo NO); reader imports failed: $seen"
# 3b. The same in place: the reader must see the broken venv (proof that it can tell).
t=$(now); with_reader inplace vx remove 'nvidia-*-cu13' --preview never --probe "import torch" > "$OUT/3b-remove.txt" 2>&1; rc=$?
dt=$(elapsed "$t"); seen=$(failed_reads inplace)
after=$(tree_hash "$a" after-restore)
check "$rc" 3; check "$before" "$after"
row "  the same, --preview never" "exit $rc" "${dt}s; byte-identical after restore: $([ "$before" = "$after" ] && echo yes || echo NO); reader imports failed: $seen"
row "  preview / in place" "" "$(ratio "$dt_fail" "$dt")x"

# 3c. --keep-going: which of the cu13 wheels can go, each verdict a probe's.
t=$(now); vx --json remove 'nvidia-*-cu13' --keep-going --probe "import torch" > "$OUT/3c-keep-going.json" 2> "$OUT/3c-keep-going.err"; rc=$?
dt=$(elapsed "$t")
row "remove nvidia-*-cu13 --keep-going" "exit $rc" "${dt}s; $(python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["transaction"]["keep_going"]; print("%d probes, %s" % (k["probes"], "exact" if k["exact"] else "greedy"))' "$OUT/3c-keep-going.json" 2>/dev/null)"
python3 - "$OUT/3c-keep-going.json" >> "$OUT/3c-table.txt" 2>/dev/null <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))["transaction"]["keep_going"]
for r in k["removed"]:
    print("  removed %-28s %s" % (r["name"], "; ".join(r["system_copies"]) or "-"))
for r in k["kept"]:
    print("  kept    %-28s %s" % (r["name"], r["reason"][:110]))
PY
while IFS= read -r line; do rows+=("$line"); done < "$OUT/3c-table.txt"
if [ "$rc" = 0 ]; then
  vx rollback > "$OUT/3c-rollback.txt" 2>&1; check "$?" 0
  check "$(tree_hash "$a" after-keep-going-rollback)" "$before"
fi

# 4. A harmless removal, then rollback.
harmless=()
for name in ${HARMLESS:-networkx jinja2}; do
  vx remove "$name" --dry-run > /dev/null 2>&1 && harmless+=("$name")
done
if [ ${#harmless[@]} -gt 0 ]; then
  t=$(now); vx remove "${harmless[@]}" --no-probe --no-baseline > "$OUT/4-remove.txt" 2>&1; rc=$?; dt_ours=$(elapsed "$t")
  row "remove ${harmless[*]}" "exit $rc" "${dt_ours}s (no probe)"
  t=$(now); vx rollback > "$OUT/4-rollback.txt" 2>&1; rc=$?; dt=$(elapsed "$t")
  back=$(tree_hash "$a" after-rollback)
  check "$rc" 0; check "$before" "$back"
  row "rollback" "exit $rc" "${dt}s; byte-identical: $([ "$before" = "$back" ] && echo yes || echo NO)"
  # 5. The same removal with pip, on the second copy.
  t=$(now); "$b/bin/python" -m pip uninstall -y -q "${harmless[@]}" > "$OUT/5-pip.txt" 2>&1; rc=$?; dt_pip=$(elapsed "$t")
  row "pip uninstall ${harmless[*]}" "exit $rc" "${dt_pip}s; venvtx/pip = $(ratio "$dt_ours" "$dt_pip")x"
fi
t=$(now); vx remove 'nvidia-*-cu13' --no-probe --no-baseline > "$OUT/5-remove-cu13.txt" 2>&1; rc=$?; dt_ours=$(elapsed "$t")
t=$(now); "$b/bin/python" -m pip uninstall -y -q $(cd "$b" && bin/python -m pip list --format=freeze 2>/dev/null | grep -i '^nvidia-.*-cu13=' | cut -d= -f1) > "$OUT/5-pip-cu13.txt" 2>&1; rc2=$?; dt_pip=$(elapsed "$t")
row "remove nvidia-*-cu13 (no probe)" "exit $rc/$rc2" "venvtx ${dt_ours}s, pip ${dt_pip}s: $(ratio "$dt_ours" "$dt_pip")x"

# 6. torch itself (12,000 files, 1 GB): removal vs pip uninstall, rollback vs pip install of the
# same torch from a local wheel (made here from b's installed files, stored, --no-compile: pip's
# fastest install), and a warm plan of a small removal.
wheels="$WORK/wheels"; mkdir -p "$wheels"
"$b/bin/python" - "$b" "$wheels" > "$OUT/6-wheel.txt" 2>&1 <<'PY'
import glob, os, sys, zipfile
venv, out = sys.argv[1:]
info = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "torch-*.dist-info"))[0]
site = os.path.dirname(info)
tag = [l.split(": ", 1)[1].strip() for l in open(os.path.join(info, "WHEEL")) if l.startswith("Tag: ")][0]
name = os.path.basename(info)[:-len(".dist-info")]
keep = []
with zipfile.ZipFile(os.path.join(out, "%s-%s.whl" % (name, tag)), "w", zipfile.ZIP_STORED) as wheel:
    for line in open(os.path.join(info, "RECORD")):
        rel = line.rsplit(",", 2)[0]
        base = os.path.basename(rel)
        if rel.startswith("../") or base in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json"):
            continue
        if os.path.isfile(os.path.join(site, rel)) and "__pycache__" not in rel:
            wheel.write(os.path.join(site, rel), rel)
            keep.append(line.rstrip("\n"))
    wheel.writestr(os.path.basename(info) + "/RECORD", "\n".join(keep + [os.path.basename(info) + "/RECORD,,"]) + "\n")
print(len(keep), "files")
PY
before_torch=$(tree_hash "$a" before-torch)
t=$(now); vx remove torch --no-probe --no-baseline > "$OUT/6-remove-torch.txt" 2>&1; rc=$?; dt_ours=$(elapsed "$t")
t=$(now); "$b/bin/python" -m pip uninstall -y -q torch > "$OUT/6-pip-torch.txt" 2>&1; rc2=$?; dt_pip=$(elapsed "$t")
row "remove torch (no probe)" "exit $rc/$rc2" "venvtx ${dt_ours}s, pip ${dt_pip}s: $(ratio "$dt_ours" "$dt_pip")x (goal 0.6x)"
t=$(now); vx rollback > "$OUT/6-rollback-torch.txt" 2>&1; rc=$?; dt_ours=$(elapsed "$t")
t=$(now); "$b/bin/python" -m pip install -q --no-index --no-deps --no-compile --find-links "$wheels" torch > "$OUT/6-pip-install.txt" 2>&1; rc2=$?; dt_pip=$(elapsed "$t")
back=$(tree_hash "$a" after-torch-rollback)
check "$rc" 0; check "$before_torch" "$back"
row "rollback of torch vs pip install" "exit $rc/$rc2" "venvtx ${dt_ours}s, pip ${dt_pip}s: $(ratio "$dt_ours" "$dt_pip")x (goal 0.3x); byte-identical: $([ "$before_torch" = "$back" ] && echo yes || echo NO)"
if [ ${#harmless[@]} -gt 0 ]; then
  vx remove "${harmless[@]}" --dry-run > /dev/null 2>&1
  t=$(now); vx remove "${harmless[@]}" --dry-run > "$OUT/6-warm-plan.txt" 2>&1; rc=$?; dt=$(elapsed "$t")
  row "warm plan: remove ${harmless[*]}" "exit $rc" "${dt}s (goal 0.1 s)"
fi

printf '%s\n' "${rows[@]}" > "$OUT/table.txt"
echo "== venvtx on $VENV (logs in $OUT)"
cat "$OUT/table.txt"
rm -rf "$WORK"
[ "$failed" = 0 ] || { echo "real_torch: a check failed (see the table)" >&2; exit 1; }
