// Unit tests for the METADATA header reader and the entry_points.txt script reader.
#include "venvtx/venv/metadata.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using venvtx::parse_metadata;
using venvtx::parse_script_names;

TEST_SUITE("parse_metadata") {
    TEST_CASE("name, version and every Requires-Dist") {
        auto metadata = parse_metadata("Metadata-Version: 2.1\n"
                                       "Name: nvidia-cudnn-cu13\n"
                                       "Version: 9.19.0.56\n"
                                       "Requires-Dist: nvidia-cublas-cu13\n"
                                       "Summary: cuDNN runtime\n"
                                       "Requires-Dist: numpy>=1.26; python_version >= \"3.11\"\n");
        CHECK(metadata.name == "nvidia-cudnn-cu13");
        CHECK(metadata.version == "9.19.0.56");
        CHECK(metadata.requires_dist ==
              std::vector<std::string>{"nvidia-cublas-cu13", "numpy>=1.26; python_version >= \"3.11\""});
    }

    TEST_CASE("continuation lines are folded into the field they follow") {
        auto metadata = parse_metadata("Name: pkg\r\n"
                                       "Requires-Dist: first\r\n"
                                       "  ; extra == \"x\"\r\n"
                                       "Description: long\n"
                                       "\tmore description\n"
                                       "Version: 2.0\n");
        CHECK(metadata.name == "pkg");
        CHECK(metadata.version == "2.0");
        CHECK(metadata.requires_dist == std::vector<std::string>{"first ; extra == \"x\""});
    }

    TEST_CASE("reading stops at the blank line before the body") {
        auto metadata = parse_metadata("Name: real\nVersion: 1.0\n\nName: fake\nVersion: 9.9\nRequires-Dist: bogus\n");
        CHECK(metadata.name == "real");
        CHECK(metadata.version == "1.0");
        CHECK(metadata.requires_dist.empty());
    }

    TEST_CASE("missing fields stay empty") {
        auto metadata = parse_metadata("Summary: nothing else\n");
        CHECK(metadata.name.empty());
        CHECK(metadata.version.empty());
        CHECK(metadata.requires_dist.empty());
    }
}

TEST_SUITE("parse_script_names") {
    TEST_CASE("console and gui scripts, other sections and comments ignored") {
        auto names = parse_script_names("# a comment\n"
                                        "[console_scripts]\n"
                                        "torchrun = torch.distributed.run:main\n"
                                        "; another comment\n"
                                        "# hidden = not.a:script\n"
                                        "\n"
                                        "[torch.plugins]\n"
                                        "plugin = x.y:z\n"
                                        "[gui_scripts]\n"
                                        "  viewer=app.gui:main  \r\n"
                                        "[other]\n"
                                        "late = a:b\n");
        CHECK(names == std::vector<std::string>{"torchrun", "viewer"});
    }

    TEST_CASE("no script sections, no names") {
        CHECK(parse_script_names("[pytest11]\nplugin = a.b\n").empty());
        CHECK(parse_script_names("").empty());
    }
}
