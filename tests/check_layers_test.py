#!/usr/bin/env python3
"""check_layers.py must turn red: a tiny house with each breach, and one without."""

import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_layers  # noqa: E402


def house(root: pathlib.Path, files: dict, layers="`core` < `store` `venv` < `txn` < `cli`"):
    (root / "docs").mkdir()
    (root / "docs" / "design.md").write_text(f"# design\n\nLayers, lowest first: {layers}\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def lines(count: int, *includes: str) -> str:
    return "".join(f'#include "venvtx/{inc}"\n' for inc in includes) + "int x;\n" * count


BALANCED = {
    "src/core/a.cpp": lines(10),
    "include/venvtx/core/a.hpp": lines(1),
    "src/store/s.cpp": lines(10, "core/a.hpp"),
    "include/venvtx/store/s.hpp": lines(1),
    "src/venv/v.cpp": lines(10, "core/a.hpp"),
    "include/venvtx/venv/v.hpp": lines(1),
    "src/txn/t.cpp": lines(10, "store/s.hpp", "venv/v.hpp"),
    "include/venvtx/txn/t.hpp": lines(1),
    "src/cli/main.cpp": lines(10, "txn/t.hpp"),
}


class CheckLayers(unittest.TestCase):
    def problems(self, changes: dict, **kwargs) -> list:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            house(root, {**BALANCED, **changes}, **kwargs)
            return check_layers.check(root, max_share=0.5)  # five folders: a fifth each

    def test_a_house_that_keeps_the_order_passes(self):
        self.assertEqual(self.problems({}), [])

    def test_an_include_up_is_named(self):
        found = self.problems({"src/store/s.cpp": lines(10, "txn/t.hpp")})
        self.assertTrue(any("store includes venvtx/txn/t.hpp" in p for p in found), found)

    def test_an_include_within_one_layer_is_named_and_so_is_the_cycle(self):
        found = self.problems({"src/store/s.cpp": lines(10, "venv/v.hpp"),
                               "src/venv/v.cpp": lines(10, "store/s.hpp")})
        self.assertTrue(any("store includes venvtx/venv/v.hpp" in p for p in found), found)
        self.assertTrue(any(p.startswith("include cycle") for p in found), found)

    def test_a_folder_over_a_fifth_of_the_lines_is_named(self):
        found = self.problems({"src/txn/t.cpp": lines(100, "store/s.hpp")})
        self.assertTrue(any(p.startswith("src/txn holds") for p in found), found)

    def test_a_folder_missing_from_the_layer_line_is_named(self):
        found = self.problems({"src/extra/e.cpp": lines(1), "include/venvtx/extra/e.hpp": lines(1)})
        self.assertTrue(any("folder 'extra' is not in" in p for p in found), found)

    def test_include_must_mirror_src(self):
        found = self.problems({"include/venvtx/orphan/o.hpp": lines(1)},
                              layers="`core` < `store` `venv` < `txn` < `orphan` < `cli`")
        self.assertIn("include/venvtx/orphan has no src/orphan", found)


if __name__ == "__main__":
    unittest.main()
