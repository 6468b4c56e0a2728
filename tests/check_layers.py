#!/usr/bin/env python3
"""The shape of the house, from the includes: every folder of src/ in the layer order that
docs/design.md gives, includes only from its own folder or a lower layer (so no cycle between
folders), include/venvtx/<m> mirroring src/<m>, and no folder over a fifth of src/'s lines.

Usage: check_layers.py [REPO_ROOT]. Prints each breach on one line; exit 1 if there is any."""

import collections
import pathlib
import re
import sys

LAYER_LINE = re.compile(r"^Layers, lowest first: (.+)$", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"venvtx/(\w+)/([\w./]+)"', re.M)
MAX_SHARE = 0.20


def layer_order(design: str) -> dict:
    """`core` < `store` `venv` < ... -> {folder: rank}."""
    match = LAYER_LINE.search(design)
    if not match:
        raise SystemExit("docs/design.md has no 'Layers, lowest first: ...' line")
    ranks = {}
    for rank, group in enumerate(match.group(1).split("<")):
        for name in re.findall(r"`(\w+)`", group):
            ranks[name] = rank
    return ranks


def folder_of(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = path.relative_to(root).parts
    return parts[1] if parts[0] == "src" else parts[2]


def sources(root: pathlib.Path):
    yield from sorted((root / "src").rglob("*.[ch]pp"))
    yield from sorted((root / "include" / "venvtx").rglob("*.hpp"))


def find_cycle(edges: dict):
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return trail + [node, nxt]
            if nxt not in state:
                found = visit(nxt, trail + [node])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def check(root: pathlib.Path, max_share: float = MAX_SHARE) -> list:
    ranks = layer_order((root / "docs" / "design.md").read_text())
    problems = []
    edges = collections.defaultdict(set)
    lines = collections.Counter()
    for path in sources(root):
        folder = folder_of(path, root)
        text = path.read_text()
        if path.parts[len(root.parts)] == "src":
            lines[folder] += text.count("\n")
        if folder not in ranks:
            problems.append(f"{path.relative_to(root)}: folder '{folder}' is not in docs/design.md's layer line")
            continue
        for target, header in INCLUDE.findall(text):
            if target == folder:
                continue
            edges[folder].add(target)
            if target not in ranks:
                problems.append(f"{path.relative_to(root)}: includes venvtx/{target}/{header}, a folder not in the layer line")
            elif ranks[target] >= ranks[folder]:
                problems.append(f"{path.relative_to(root)}: {folder} includes venvtx/{target}/{header}, "
                                f"which is not below it in docs/design.md's layer order")
    cycle = find_cycle(edges)
    if cycle:
        problems.append("include cycle between folders: " + " -> ".join(cycle))
    src_folders = {p.name for p in (root / "src").iterdir() if p.is_dir()}
    include_folders = {p.name for p in (root / "include" / "venvtx").iterdir() if p.is_dir()}
    for name in sorted(include_folders - src_folders):
        problems.append(f"include/venvtx/{name} has no src/{name}")
    for name in sorted(src_folders - include_folders - {"cli"}):
        problems.append(f"src/{name} has no include/venvtx/{name}")
    total = sum(lines.values())
    for folder, count in sorted(lines.items()):
        if count > max_share * total:
            problems.append(f"src/{folder} holds {count} of src/'s {total} lines ({count / total:.0%}, "
                            f"over {max_share:.0%}): split it by role")
    return problems


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = check(root.resolve())
    for problem in problems:
        print(problem)
    if not problems:
        print("layers: every include points down; no folder over 20% of src/")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
