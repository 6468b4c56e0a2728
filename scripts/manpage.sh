#!/usr/bin/env bash
# Writes the man page venvtx.1 from the CLI's own help (help2man), with every command's --help
# as a section, so the page never drifts from the binary. Usage: manpage.sh VENVTX OUT
set -euo pipefail
bin=$1
out=$2
include=$(mktemp)
trap 'rm -f "$include" "$out.tmp"' EXIT
{
  echo "[COMMANDS]"
  for command in $("$bin" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }'); do
    echo ".SS \"venvtx $command\""
    echo ".nf"
    "$bin" "$command" --help | tail -n +2 | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
    echo ".fi"
  done
  echo "[EXIT STATUS]"
  echo "0 done; 1 internal error (the venv restored, or its transaction left to \\fBvenvtx recover\\fR);"
  echo "2 bad input, a failed installer, a guard rail without \\fB--force\\fR (nothing changed); 3 the probe"
  echo "failed (previewed: the live venv never changed; in place: restored byte-identically); 4 the venv"
  echo "already failed the probe (nothing changed); 5 locked by another venvtx or uv."
  echo "[SEE ALSO]"
  echo "README.md and docs/design.md in venvtx's source."
} >"$include"
LC_ALL=C.UTF-8 help2man --no-info --no-discard-stderr --name "every change to a Python venv as a transaction" \
  --include "$include" "$bin" >"$out.tmp"
mv "$out.tmp" "$out"
