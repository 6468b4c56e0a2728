#!/usr/bin/env bash
# Writes the man page venvtx.1 from the CLI's own help (help2man), with every command's --help
# as a section, so the page never drifts from the binary. The help is asked for 72 columns wide,
# so that `man` shows no line past 80. Usage: manpage.sh VENVTX OUT
set -euo pipefail
bin=$1
out=$2
include=$(mktemp)
trap 'rm -f "$include" "$out.tmp"' EXIT
export COLUMNS=72
{
  echo "[COMMANDS]"
  for command in $("$bin" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
    echo ".SS \"venvtx $command\""
    echo ".nf"
    "$bin" "$command" --help | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
    echo ".fi"
  done
  cat <<'TEXT'
[EXIT STATUS]
.TP
.B 0
Done; under \fB--dry-run\fR, the change would pass.
.TP
.B 1
An internal error or a failed system call; the venv is restored, or its transaction is left to
\fBvenvtx recover\fR.
.TP
.B 2
Bad input, a pattern that matches nothing, a failed installer or command, a guard rail without
\fB--force\fR: nothing changed.
.TP
.B 3
The probe failed after the change: previewed, the live venv never changed; in place, it was
restored byte for byte.
.TP
.B 4
The venv failed the probe before the change and still fails it after: restored.
.TP
.B 5
Another venvtx, or uv, holds the venv: nothing changed (\fB--wait\fR waits).
.TP
.B 6
A rollback refused because the venv changed since (drift; \fB--force\fR stores and goes on), or
a stored copy no longer matches its hash.
.TP
.B 130
Interrupted (SIGINT, SIGTERM, SIGHUP) during a probe: restored first.
[EXAMPLES]
.nf
venvtx config probe "import torch"      # every change is probed
venvtx remove 'nvidia-*-cu13' --dry-run # what goes, which libraries
venvtx remove 'nvidia-*-cu13'           # restored if the probe fails
venvtx install torch==2.12.0 -- --no-index --find-links ./wheels
venvtx run -- pip uninstall -y flash-attn
venvtx log                              # the history, newest first
venvtx rollback                         # undo the newest change
venvtx rollback --to 3 --dry-run        # what going back to 3 means
venvtx exec -- python train.py          # record what a job loaded
venvtx --json log | jq '.transactions[0]'
.fi
[ENVIRONMENT]
.TP
.B VIRTUAL_ENV
The venv, when \fB--venv\fR is not given (else \fI./.venv\fR).
.TP
.B VENVTX_STORE
Where the history and stored files live, when \fB--store\fR is not given (else
\fI<venv>/.venvtx\fR). A store serves one venv.
.TP
.B VENVTX_LD_CACHE
An \fBldconfig -p\fR listing to read instead of the system's (for the library analysis).
.TP
.B COLUMNS
The width \fB--help\fR wraps to (80 when unset).
[FILES]
.TP
.I <venv>/.venvtx/index.sqlite
The history: transactions, their paths, states, settings.
.TP
.I <venv>/.venvtx/objects/, packs/, staging/
The stored files that undo each transaction.
.TP
.I <venv>/.lock
The lock venvtx shares with uv while it changes the venv.
[SEE ALSO]
\fBpip\fR(1), \fBuv\fR(1). The JSON schema: docs/json.md in venvtx's source.
TEXT
} >"$include"
LC_ALL=C.UTF-8 help2man --no-info --no-discard-stderr --name "every change to a Python venv as a transaction" \
  --include "$include" "$bin" >"$out.tmp"
mv "$out.tmp" "$out"
