#!/usr/bin/python
# -*- coding: utf-8 -*-
# MIT License (see LICENSE in the venvtx repository)
"""The venvtx module: one venvtx command on a host's venv, through `venvtx --json`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: venvtx
short_description: Change a Python venv as a transaction that is probed, and restored if the probe fails
version_added: "0.1.0"
description:
  - Runs one venvtx command on a host's virtual environment and
    reports venvtx's own verdict. C(remove) and C(install) capture the files they touch, make the
    change (in a private overlay view first where the kernel allows it), run the probe, and restore
    the exact prior bytes when the probe fails. C(rollback) undoes the newest transaction, a named
    one, or every one after an entry. C(probe) and C(status) change nothing.
  - C(changed) is exact. Removing what is absent, or installing what is already there, is
    C(changed=false), so a play can run twice.
  - In check mode, a mutation is venvtx's C(--dry-run). With a probe, that is a what-if. The change
    is made and probed in a private view, and nothing is applied. The result says whether the change
    would pass (C(verdict)) and what it would change (C(plan)). A what-if that would fail the probe
    fails the task.
  - In diff mode, the venv's distributions before and after are shown, and the plan as C(prepared).
  - A failure carries venvtx's exit code as C(rc) and its error kind as C(error_kind).
author:
  - venvtx developers
requirements:
  - the venvtx binary on the managed host (see O(binary))
options:
  command:
    description:
      - The venvtx command to run.
    type: str
    choices: [remove, install, rollback, probe, status]
    required: true
  venv:
    description:
      - The virtual environment's root directory.
    type: path
    required: true
  packages:
    description:
      - For C(remove), distribution names or shell globs (C(nvidia-*-cu13)).
      - For C(install), requirement specifiers (C(torch==2.11.0)).
    type: list
    elements: str
  probe:
    description:
      - Python code the venv's interpreter runs after the change, one line per item.
      - The change is restored when the code fails. The probe also runs on every GPU the baseline sees.
      - Without it, venvtx uses the probe saved with C(venvtx config probe), if any.
    type: list
    elements: str
  no_probe:
    description:
      - Run no probe, not even the saved one.
    type: bool
    default: false
  probe_timeout:
    description:
      - Seconds before a probe is killed (venvtx's default is 300).
    type: float
  gpus:
    description:
      - The GPUs the probe must see. V(auto) means as many as the baseline, V(none) means no GPU,
        and a number means exactly that many.
    type: str
  preview:
    description:
      - V(auto) makes the change in a private overlay view first where the system allows it.
        V(always) refuses when no view can be made. V(never) changes the venv in place and restores
        it when the probe fails.
    type: str
    choices: [auto, always, never]
  keep_going:
    description:
      - C(remove) only. When the probe fails, commit the largest subset whose removal passes.
    type: bool
    default: false
  strict:
    description:
      - C(remove) only. A pattern that matches nothing is an error; by default it is skipped.
    type: bool
    default: false
  installer:
    description:
      - C(install) only. The installer to run.
    type: str
    choices: [auto, pip, uv]
  installer_args:
    description:
      - C(install) only. Arguments passed to the installer after C(--), for example
        C([--no-index, --find-links, /srv/wheels]) or C([-r, requirements.txt]).
    type: list
    elements: str
  to:
    description:
      - C(rollback) only. Undo every transaction after entry N, as one transaction (0 undoes them all).
    type: int
  transaction:
    description:
      - C(rollback) only. Undo this transaction alone, for example the RV(tx) an earlier task
        returned. When it is already undone, the task is C(changed=false).
    type: int
  force:
    description:
      - C(remove) also removes the venv's installer (pip). It also removes venvtx's own distribution
        when venvtx runs from this venv.
      - C(install) may replace the venvtx that is running.
      - C(rollback) goes on over files changed since (drift), and stores them first.
    type: bool
    default: false
  no_baseline:
    description:
      - Skip the probe before the change.
    type: bool
    default: false
  wait:
    description:
      - Seconds to wait for another venvtx (or uv) that holds the venv. Without it, a held venv fails
        at once with RV(error_kind=locked).
    type: float
  store:
    description:
      - Where venvtx keeps the history and the stored files. The default is C(<venv>/.venvtx).
    type: path
  binary:
    description:
      - The venvtx executable on the managed host.
    type: path
    default: venvtx
attributes:
  check_mode:
    support: full
    description: A mutation becomes venvtx's what-if (C(--dry-run)). Nothing is applied or recorded.
  diff_mode:
    support: full
    description: The venv's distributions before and after, and the plan as C(prepared).
notes:
  - The module needs venvtx 0.1.0 or later, which prints JSON schema 1.
"""

EXAMPLES = r"""
- name: Remove the cu13 wheels unless torch stops importing
  venvtx.venvtx.venvtx:
    command: remove
    venv: /opt/torch/.venv
    packages: ["nvidia-*-cu13"]
    probe: ["import torch"]
  register: cleanup

- name: Upgrade torch from a local wheel directory, previewed and probed
  venvtx.venvtx.venvtx:
    command: install
    venv: /opt/torch/.venv
    packages: ["torch==2.12.0"]
    installer_args: [--no-index, --find-links, /srv/wheels]
    probe: ["import torch; assert torch.cuda.is_available()"]

- name: Undo that cleanup later, by its id
  venvtx.venvtx.venvtx:
    command: rollback
    venv: /opt/torch/.venv
    transaction: "{{ cleanup.tx }}"
  when: cleanup.changed

- name: Does the venv still import torch?
  venvtx.venvtx.venvtx:
    command: probe
    venv: /opt/torch/.venv
    probe: ["import torch"]
"""

RETURN = r"""
rc:
  description: venvtx's exit code. 0 is done; 2 is bad input (nothing changed); 3 is probe failed
    (restored); 4 is the venv failing before and after (restored); 5 is locked; 6 is drift.
  returned: always
  type: int
error_kind:
  description: venvtx's error kind (C(no_match), C(usage), C(drift), C(locked), ...), or
    C(probe_failed) or C(baseline_failed) when the probe failed and venvtx restored the venv.
    Null on success.
  returned: always
  type: str
error:
  description: venvtx's error object (C(kind), C(exit_code), C(message), C(details)).
  returned: when venvtx refused or failed
  type: dict
tx:
  description: The id of the transaction venvtx recorded. Pass it to O(transaction) to undo it.
  returned: when a transaction was recorded
  type: int
transaction:
  description: venvtx's transaction object (docs/json.md), with its packages, probes and state.
  returned: when a transaction was recorded
  type: dict
plan:
  description: What the change does or would do (the packages before and after, lost shared
    libraries, the paths a rollback restores).
  returned: for remove, install and rollback
  type: dict
verdict:
  description: In check mode, the what-if's verdict (C(passes), C(fails), C(fixes),
    C(still_failing), C(not_probed), C(command_failed)).
  returned: in check mode
  type: str
what_if:
  description: In check mode with a probe, the what-if's probes and verdict.
  returned: in check mode
  type: dict
repair:
  description: C(fixed) when the venv failed the probe before and passes after, C(still_failing)
    when it failed both times.
  returned: for remove, install and rollback
  type: str
restored:
  description: True when the probe failed and venvtx put the venv back.
  returned: always
  type: bool
probe:
  description: The probe report (for O(command=probe)).
  returned: for probe
  type: dict
status:
  description: What differs from the venv's last recorded state (for O(command=status)).
  returned: for status
  type: dict
cmd:
  description: The venvtx command line that ran.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.venvtx.venvtx.plugins.module_utils.venvtx_cli import (
    apply_packages, build_argv, freeze_lines, global_argv, interpret, misplaced_options, parse_document,
    prepared_text)

ARGUMENT_SPEC = dict(
    command=dict(type="str", required=True, choices=["remove", "install", "rollback", "probe", "status"]),
    venv=dict(type="path", required=True),
    packages=dict(type="list", elements="str"),
    probe=dict(type="list", elements="str"),
    no_probe=dict(type="bool", default=False),
    probe_timeout=dict(type="float"),
    gpus=dict(type="str"),
    preview=dict(type="str", choices=["auto", "always", "never"]),
    keep_going=dict(type="bool", default=False),
    strict=dict(type="bool", default=False),
    installer=dict(type="str", choices=["auto", "pip", "uv"]),
    installer_args=dict(type="list", elements="str"),
    to=dict(type="int"),
    transaction=dict(type="int"),
    force=dict(type="bool", default=False),
    no_baseline=dict(type="bool", default=False),
    wait=dict(type="float"),
    store=dict(type="path"),
    binary=dict(type="path", default="venvtx"),
)


def venvtx_document(module, argv):
    rc, stdout, stderr = module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C.UTF-8"})
    return rc, parse_document(stdout), stderr


# The venv's distributions, as its own interpreter sees them (venvtx freeze needs a history).
LIST_DISTRIBUTIONS = ("import importlib.metadata as m, json; "
                      "print(json.dumps([[d.metadata['Name'], d.version] for d in m.distributions()]))")


def distributions(module, params):
    python = os.path.join(params["venv"], "bin", "python")
    rc, stdout, stderr = module.run_command([python, "-c", LIST_DISTRIBUTIONS], check_rc=False)
    if rc != 0:
        module.fail_json(msg="cannot list the venv's distributions (exit %d): %s" % (rc, stderr.strip()), rc=rc)
    return freeze_lines(json.loads(stdout))


def already_undone(module, params):
    argv = global_argv(params) + ["show", str(params["transaction"])]
    rc, document, _ = venvtx_document(module, argv)
    return rc == 0 and document is not None and document["transaction"]["state"] == "undone"


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
        mutually_exclusive=[("to", "transaction")],
        required_if=[("command", "remove", ("packages",)),
                     ("command", "install", ("packages", "installer_args"), True)],
    )
    params = module.params
    misplaced = misplaced_options(params)
    if misplaced:
        module.fail_json(msg=misplaced)
    if params["probe"] and params["no_probe"]:
        module.fail_json(msg="probe and no_probe exclude each other")
    command = params["command"]
    diffing = module._diff and command in ("remove", "install", "rollback")
    before = distributions(module, params) if diffing else None
    argv = build_argv(params, module.check_mode)
    rc, document, stderr = venvtx_document(module, argv)
    result = interpret(params, rc, document, stderr, module.check_mode)
    result["cmd"] = argv
    if result["error_kind"] == "not_undoable" and params["transaction"] is not None and already_undone(module, params):
        result.update(failed=False, msg="tx %d is already undone" % params["transaction"])
    if diffing:
        packages = []
        if module.check_mode:
            packages = (result["plan"] or {}).get("packages")
        elif result["changed"]:
            packages = result["transaction"]["packages"]
        result["diff"] = {"before": "\n".join(before) + "\n",
                          "after": "\n".join(apply_packages(before, packages)) + "\n",
                          "prepared": prepared_text(result["plan"])}
    if result.pop("failed"):
        module.fail_json(**result)
    # `failed` said outright: else Ansible takes a non-zero rc (venvtx's "nothing matched") for a failure.
    module.exit_json(failed=False, **result)


if __name__ == "__main__":
    main()
