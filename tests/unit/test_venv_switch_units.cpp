// The units a change switches by, and where a switched path lies meanwhile.
#include "venvtx/venv/switch_units.hpp"

#include <doctest/doctest.h>

using namespace venvtx;

namespace {

VenvLayout layout() {
    VenvLayout venv;
    venv.root = "/v";
    venv.site_packages = {"/v/lib/python3.12/site-packages"};
    return venv;
}

} // namespace

TEST_SUITE("SwitchUnits") {
    TEST_CASE("a path belongs to the top-level entry of its area") {
        SwitchUnits units(layout());
        CHECK(units.unit_of("lib/python3.12/site-packages/torch/nn/functional.py") ==
              "lib/python3.12/site-packages/torch");
        CHECK(units.unit_of("lib/python3.12/site-packages/torch") == "lib/python3.12/site-packages/torch");
        CHECK(units.unit_of("lib/python3.12/site-packages/six.py") == "lib/python3.12/site-packages/six.py");
        CHECK(units.unit_of("lib/python3.12/site-packages/torch-2.11.0.dist-info/RECORD") ==
              "lib/python3.12/site-packages/torch-2.11.0.dist-info");
        CHECK(units.unit_of("bin/torchrun") == "bin/torchrun");
        CHECK(units.unit_of("include/site/python3.12/greenlet/greenlet.h") == "include/site");
        CHECK(units.unit_of("share/jupyter/kernels/python3/kernel.json") == "share/jupyter");
        CHECK(units.unit_of("etc/jupyter/x.json") == "etc");
        CHECK(units.unit_of("pyvenv.cfg") == "pyvenv.cfg");
    }

    TEST_CASE("an area and its ancestors belong to none") {
        SwitchUnits units(layout());
        CHECK_FALSE(units.unit_of("lib"));
        CHECK_FALSE(units.unit_of("lib/python3.12"));
        CHECK_FALSE(units.unit_of("lib/python3.12/site-packages"));
        CHECK_FALSE(units.unit_of("bin"));
        CHECK_FALSE(units.unit_of("share"));
        CHECK(units.unit_of("lib/python3.12/other.py") == "lib/python3.12/other.py");
    }
}

TEST_SUITE("Relocation") {
    TEST_CASE("a path in a switched unit lies below its shadow") {
        std::map<std::string, std::string> shadows = {{"sp/torch", "sp/.venvtx-sw-3-1-0"},
                                                      {"sp/nvidia/cudnn", "sp/nvidia/.venvtx-sw-3-1-1"}};
        Relocation relocation(shadows, {"sp/nvidia/cudnn"});
        CHECK(relocation.locate("/v", "sp/torch/nn/f.py") == "/v/sp/.venvtx-sw-3-1-0/nn/f.py");
        CHECK(relocation.locate("/v", "sp/torch") == "/v/sp/.venvtx-sw-3-1-0");
        CHECK(relocation.locate("/v", "sp/nvidia/cudnn/lib/libcudnn.so.9") ==
              "/v/sp/nvidia/.venvtx-sw-3-1-1/lib/libcudnn.so.9");
        CHECK(relocation.locate("/v", "sp/torchvision/x.py") == "/v/sp/torchvision/x.py");
        CHECK(relocation.locate("/v", "sp/nvidia/nccl/lib/libnccl.so.2") == "/v/sp/nvidia/nccl/lib/libnccl.so.2");
        CHECK(relocation.unit_of("sp/torch-2.11.dist-info/RECORD") == std::nullopt);
        CHECK(relocation.active());
        CHECK(relocation.links_sources("sp/torch/x.py"));
        CHECK_FALSE(relocation.links_sources("sp/nvidia/cudnn/lib/libcudnn.so.9"));  // fresh: renamed in
        CHECK_FALSE(relocation.links_sources("sp/torchvision/x.py"));
        CHECK_FALSE(Relocation().active());
        CHECK(Relocation().locate("/v", "sp/torch/x.py") == "/v/sp/torch/x.py");
    }
}
