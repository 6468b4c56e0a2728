#!/usr/bin/env bash
# The story, end to end, on a demo venv this script builds itself (real wheels, real pip, real
# ELF libraries): the probe saved once; removing the cu13 "contaminants" breaks `import torch` ->
# previewed, the live venv never sees it; in place (--preview never), venvtx restores every byte;
# a harmless removal commits; rollback undoes it; log shows the history.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/scripts/setup.sh"
echo "== building venvtx (Release, only the binary the demo runs)"
bash "$repo/scripts/build.sh" venvtx >/dev/null
demo="${VENVTX_DEMO_DIR:-$repo/.demo}"
rm -rf "$demo"
echo "== building the demo venv in $demo (torch 2.11.0 + nvidia-*-cu13 + sglang, flashinfer, flash-attn)"
python3 "$repo/tests/fixtures/make_story_venv.py" "$demo" >/dev/null
venvtx() { echo; echo "\$ venvtx $(printf "%q " "$@")"; "$repo/build/venvtx" --venv "$demo/venv" "$@"; }
tree() { (cd "$demo/venv" && find . -path ./.venvtx -prune -o -path ./.lock -prune -o -type f -print0 |
          sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }
export VENVTX_FAKE_GPUS=2   # the demo's stand-in torch reports two GPUs

same_as_before() {
  echo "tree hash before: $before   after: $(tree)"
  [ "$before" = "$(tree)" ] && echo "byte-identical: yes" || { echo "byte-identical: NO"; exit 1; }
}
before=$(tree)
venvtx config probe "import torch"   # once: every change from now on is probed
set +e
venvtx remove 'nvidia-*-cu13'
echo "(exit code $?: the probe failed in a private preview; the live venv was never changed)"
same_as_before
venvtx remove 'nvidia-*-cu13' --preview never
echo "(exit code $?: removed in place, the probe failed, every byte restored)"
set -e
same_as_before

venvtx remove sglang 'flash*'

venvtx rollback
echo "tree hash now: $(tree) (byte-identical to the start: $([ "$before" = "$(tree)" ] && echo yes || echo no))"
venvtx log
