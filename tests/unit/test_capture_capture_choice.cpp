// spec_name and estimate_capture: which distribution a spec names, and how much of the venv it holds.
#include "venvtx/capture/capture_choice.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>

using venvtx::estimate_capture;
using venvtx::spec_name;
namespace stdfs = std::filesystem;

TEST_SUITE("capture_choice") {
    TEST_CASE("spec_name reads requirement specifiers and wheel paths") {
        CHECK(spec_name("torch==2.12.0") == "torch");
        CHECK(spec_name("Flash_Attn[extra]>=2") == "flash-attn");
        CHECK(spec_name("nvidia.cudnn.cu13 ; python_version>'3'") == "nvidia-cudnn-cu13");
        CHECK(spec_name("./wheels/nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_27_x86_64.whl") == "nvidia-nccl-cu13");
        CHECK(spec_name("git+https://example.org/x.git") == "");
    }

    TEST_CASE("estimate_capture counts RECORD lines of the named and of all distributions") {
        venvtx::test::TempDir tmp;
        venvtx::VenvLayout layout;
        layout.root = tmp.path();
        stdfs::path site = tmp.path() / "lib" / "python3.11" / "site-packages";
        layout.site_packages = {site};
        auto dist = [&](const std::string& dir, int lines) {
            stdfs::create_directories(site / dir);
            std::ofstream record(site / dir / "RECORD");
            for (int i = 0; i < lines; ++i) {
                record << "f" << i << ".py,,\n";
            }
        };
        dist("torch-2.11.0.dist-info", 300);
        dist("small_pkg-1.0.dist-info", 10);
        dist("other-1.0.dist-info", 690);
        auto big = estimate_capture(layout, {"torch==2.12.0"});
        CHECK(big.named_files == 300);
        CHECK(big.venv_files == 1000);
        CHECK(big.prefer_link());
        auto small = estimate_capture(layout, {"Small.Pkg>=1", "not-installed"});
        CHECK(small.named_files == 10);
        CHECK_FALSE(small.prefer_link());
    }
}
