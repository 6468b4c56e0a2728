// A small mutation fuzzer driving LLVMFuzzerTestOneInput where libFuzzer is not used (g++ CI
// builds): mutates the seed corpus for a bounded time, under AddressSanitizer and UBSan.
// usage: fuzz_X [--seconds N] CORPUS_DIR
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::string> load_corpus(const std::filesystem::path& dir) {
    std::vector<std::string> seeds;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::ostringstream content;
        content << in.rdbuf();
        seeds.push_back(content.str());
    }
    return seeds;
}

std::string mutate(std::string input, const std::vector<std::string>& seeds, std::mt19937_64& random) {
    static const std::string k_interesting = ",\"\r\n\t =:[]#;\\/.\x00\xff";
    int rounds = 1 + static_cast<int>(random() % 6);
    for (int i = 0; i < rounds; ++i) {
        size_t at = input.empty() ? 0 : random() % (input.size() + 1);
        switch (random() % 6) {
        case 0: // truncate
            input.resize(at);
            break;
        case 1: // flip a byte
            if (!input.empty()) {
                input[at % input.size()] ^= static_cast<char>(1 << (random() % 8));
            }
            break;
        case 2: // insert a byte that matters to these grammars
            input.insert(at, 1, k_interesting[random() % k_interesting.size()]);
            break;
        case 3: // delete a run
            input.erase(at, random() % 8);
            break;
        case 4: { // splice another seed
            const std::string& other = seeds[random() % seeds.size()];
            size_t from = other.empty() ? 0 : random() % other.size();
            input.insert(at, other.substr(from, random() % 64));
            break;
        }
        default: // duplicate a run
            input.insert(at, input.substr(at, random() % 32));
            break;
        }
    }
    return input;
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 10;
    std::string corpus;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--seconds" && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else {
            corpus = arg;
        }
    }
    if (corpus.empty()) {
        std::fprintf(stderr, "usage: %s [--seconds N] CORPUS_DIR\n", argv[0]);
        return 2;
    }
    std::vector<std::string> seeds = load_corpus(corpus);
    if (seeds.empty()) {
        std::fprintf(stderr, "empty corpus %s\n", corpus.c_str());
        return 2;
    }
    std::mt19937_64 random(20261129);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::uint64_t runs = 0;
    for (const auto& seed : seeds) {
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size());
    }
    while (std::chrono::steady_clock::now() < deadline) {
        std::string input = mutate(seeds[random() % seeds.size()], seeds, random);
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
        ++runs;
    }
    std::printf("%llu inputs in %.0fs, no crash\n", static_cast<unsigned long long>(runs), seconds);
    return 0;
}
