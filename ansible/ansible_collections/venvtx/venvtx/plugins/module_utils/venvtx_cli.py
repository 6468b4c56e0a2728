# -*- coding: utf-8 -*-
# MIT License (see LICENSE in the venvtx repository)
"""The venvtx module's dealings with the venvtx binary: the command line it runs, and how
venvtx's exit codes and --json documents (schema 1, docs/json.md) become an Ansible result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

SCHEMA_VERSION = 1

# venvtx's exit codes (docs/json.md), as a failed task reports them.
EXIT_MEANINGS = {
    0: "done",
    1: "venvtx hit a bug or a failed system call; nothing is half-changed",
    2: "bad input, or a command that failed; nothing changed",
    3: "the probe failed after the change; venvtx restored the venv",
    4: "the venv failed the probe before the change and still fails it after; venvtx restored it",
    5: "another venvtx (or uv) holds the venv; nothing changed",
    6: "venvtx refused: the venv changed since (drift), or a stored copy is damaged",
    130: "interrupted during a probe; venvtx restored the venv first",
}

# The kind a failure without an error document has, by exit code.
EXIT_KINDS = {1: "system", 2: "usage", 3: "probe_failed", 4: "baseline_failed", 5: "locked", 6: "drift",
              130: "interrupted"}

# Options that only some commands take: (option, the commands that take it).
OPTION_COMMANDS = (
    ("packages", ("remove", "install")),
    ("keep_going", ("remove",)),
    ("strict", ("remove",)),
    ("installer", ("install",)),
    ("installer_args", ("install",)),
    ("to", ("rollback",)),
    ("transaction", ("rollback",)),
    ("preview", ("remove", "install", "rollback")),
    ("force", ("remove", "install", "rollback")),
    ("no_baseline", ("remove", "install", "rollback")),
    ("wait", ("remove", "install", "rollback")),
)


def misplaced_options(params):
    """The options set that the command does not take, as one message ("" when none)."""
    command = params["command"]
    wrong = [name for name, commands in OPTION_COMMANDS
             if command not in commands and params.get(name) not in (None, False, [])]
    if not wrong:
        return ""
    return "%s: not an option of command=%s" % (", ".join(sorted(wrong)), command)


def global_argv(params):
    """venvtx and its global options, up to the command."""
    argv = [params["binary"], "--json", "--no-progress", "--venv", params["venv"]]
    if params.get("store"):
        argv += ["--store", params["store"]]
    return argv


def _probe_args(params):
    argv = []
    for line in params.get("probe") or []:
        argv += ["--probe", line]
    if params.get("no_probe"):
        argv.append("--no-probe")
    if params.get("probe_timeout") is not None:
        argv += ["--probe-timeout", str(params["probe_timeout"])]
    if params.get("gpus") is not None:
        argv += ["--gpus", str(params["gpus"])]
    return argv


def build_argv(params, check_mode):
    """The venvtx command line for the task: under check mode a mutation is a --dry-run (with a
    probe, venvtx's what-if: made and probed in a private view, nothing applied)."""
    command = params["command"]
    argv = global_argv(params) + [command]
    if command == "status":
        return argv
    argv += _probe_args(params)
    if command == "probe":
        return argv
    if params.get("preview"):
        argv += ["--preview", params["preview"]]
    for flag in ("force", "no_baseline", "keep_going", "strict"):
        if params.get(flag):
            argv.append("--" + flag.replace("_", "-"))
    if params.get("wait") is not None:
        argv += ["--wait", str(params["wait"])]
    if command == "install" and params.get("installer"):
        argv += ["--installer", params["installer"]]
    if command == "rollback":
        if params.get("to") is not None:
            argv += ["--to", str(params["to"])]
        elif params.get("transaction") is not None:
            argv.append(str(params["transaction"]))
    if check_mode:
        argv.append("--dry-run")
    argv += list(params.get("packages") or [])
    if params.get("installer_args"):
        argv += ["--"] + list(params["installer_args"])
    return argv


def parse_document(stdout):
    """venvtx's one JSON object, or None when stdout holds none (venvtx missing, killed...)."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _package_lines(packages):
    return ["%s %s -> %s" % (p["name"], p.get("before") or "(absent)", p.get("after") or "(absent)")
            for p in packages or []]


def _would_change(plan):
    if not plan:
        return False
    packages = plan.get("packages") or []
    if any(p.get("before") != p.get("after") for p in packages):
        return True
    return bool(plan.get("undoes")) or bool(plan.get("paths"))


def _transaction_id(transaction):
    return transaction.get("id") if isinstance(transaction, dict) else None


def interpret(params, rc, document, stderr, check_mode):
    """The task's result from venvtx's exit code and document. `changed` is exact: true only when
    venvtx committed a change (or, in check mode, would make one)."""
    command = params["command"]
    result = {"rc": rc, "changed": False, "failed": False, "error_kind": None, "error": None,
              "transaction": None, "tx": None, "plan": None, "what_if": None, "verdict": None,
              "repair": None, "restored": False}
    if document is None:
        result.update(failed=True, error_kind=EXIT_KINDS.get(rc, "internal"),
                      msg="venvtx printed no JSON document (exit %d): %s" % (rc, (stderr or "").strip()[-2000:]))
        return result
    if document.get("schema_version") != SCHEMA_VERSION:
        result.update(failed=True, error_kind="usage",
                      msg="venvtx speaks JSON schema %r; this module reads schema %d"
                          % (document.get("schema_version"), SCHEMA_VERSION))
        return result
    error = document.get("error")
    if isinstance(error, dict):  # a probe report's own `error` is its message
        return _interpret_error(params, rc, error, result)
    if command in ("probe", "status"):
        result[command] = document
        if command == "probe":
            result.update(failed=rc != 0, error_kind=EXIT_KINDS.get(rc) if rc else None)
            result["msg"] = "probe passed" if rc == 0 else "probe failed: %s" % (document.get("error") or "")
        else:
            result["msg"] = "the venv differs from its last recorded state" if document.get("changed") \
                else "the venv is as last recorded"
        return result
    return _interpret_mutation(rc, document, result, check_mode)


def _interpret_error(params, rc, error, result):
    command = params["command"]
    kind = error.get("kind")
    result.update(error_kind=kind, error=error, msg=error.get("message") or EXIT_MEANINGS.get(rc, "failed"))
    if kind == "nothing_to_undo" and command == "rollback" and params.get("transaction") is None \
            and params.get("to") is None:
        return result  # the newest is undone already
    result["failed"] = True
    return result


def _interpret_mutation(rc, document, result, check_mode):
    transaction = document.get("transaction")
    what_if = document.get("what_if")
    plan = document.get("plan") or (transaction or {}).get("plan")
    result.update(transaction=transaction, tx=_transaction_id(transaction), plan=plan, what_if=what_if,
                  repair=(transaction or {}).get("repair"),
                  changed_outside=document.get("changed_outside") or [],
                  not_at_target=document.get("not_at_target"))
    if check_mode:
        result["changed"] = _would_change(plan)
        result["verdict"] = (what_if or {}).get("verdict") or "not_probed"
        result["failed"] = rc != 0
        result["msg"] = _check_message(rc, result)
        return result
    result["changed"] = bool(document.get("changed"))
    if rc in (3, 4, 130):
        result.update(failed=True, restored=True, error_kind=EXIT_KINDS[rc], msg=_restored_message(rc, transaction))
        return result
    result["failed"] = rc != 0
    if rc != 0:
        result.update(error_kind=EXIT_KINDS.get(rc, "internal"), msg=EXIT_MEANINGS.get(rc, "failed"))
    elif result["changed"]:
        result["msg"] = "committed tx %s" % result["tx"] + (" (the change fixed the probe)"
                                                            if result["repair"] == "fixed" else "")
    else:
        result["msg"] = "nothing to change"
    return result


def _check_message(rc, result):
    would = "would change the venv" if result["changed"] else "would change nothing"
    if rc == 0:
        return "check: %s; probe verdict: %s" % (would, result["verdict"])
    if rc == 3:
        return "check: the probe would fail after this change (%s); nothing was changed" % would
    if rc == 4:
        return "check: the venv fails the probe now and would still fail it after; nothing was changed"
    if rc == 6:
        plan = result["plan"] or {}
        return "check: drift would refuse the rollback: %s" % ((plan.get("refused") or {}).get("message") or "")
    return "check: " + EXIT_MEANINGS.get(rc, "failed")


def _restored_message(rc, transaction):
    tx = _transaction_id(transaction)
    meaning = EXIT_MEANINGS[rc]
    if (transaction or {}).get("state") == "aborted":  # previewed: it failed in a private view
        meaning = meaning.replace("venvtx restored the venv", "it was previewed: the live venv never changed") \
            .replace("venvtx restored it", "it was previewed: the live venv never changed")
    probe = (transaction or {}).get("probe") or {}
    reason = probe.get("error") or ""
    return "%s%s%s" % (meaning, " (tx %s)" % tx if tx is not None else "", ": " + reason if reason else "")


def freeze_lines(pairs):
    """`name==version` lines of [name, version] pairs, sorted."""
    return sorted("%s==%s" % (name, version) for name, version in pairs)


def apply_packages(before_lines, packages):
    """The freeze lines after `packages` ({name, before, after}) changed: for diff mode."""
    def key(name):
        return name.lower().replace("_", "-").replace(".", "-")
    changes = {key(p["name"]): p for p in packages or []}
    after = [line for line in before_lines if key(line.split("==", 1)[0]) not in changes]
    after += ["%s==%s" % (p["name"], p["after"]) for p in changes.values() if p.get("after")]
    return sorted(after)


def prepared_text(plan):
    """The plan, as diff mode's `prepared`: packages before -> after, and what would break."""
    if not plan:
        return ""
    lines = _package_lines(plan.get("packages"))
    for lost in plan.get("lost_libraries") or []:
        lines.append("%s would lose its last provider" % lost.get("soname"))
    for broken in plan.get("broken_requirements") or []:
        lines.append("requirement broken: %s" % json.dumps(broken, sort_keys=True))
    if plan.get("paths"):
        lines.append("%d paths restored" % len(plan["paths"]))
    refused = plan.get("refused")
    if refused:
        lines.append("refused: %s" % refused.get("message"))
    return "\n".join(lines) + "\n" if lines else ""
