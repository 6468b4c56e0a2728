// venvtx gc [--keep N] [--older-than D] [--max-size S] [--dry-run] [--set-policy] [--auto on|off]
#include "command.hpp"

#include "venvtx/upkeep/gc.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct GcFlags {
    std::optional<std::int64_t> keep;
    std::optional<std::string> older_than;
    std::optional<std::string> max_size;
    std::optional<std::string> automatic;
    bool dry_run = false;
    bool set_policy = false;
    std::optional<double> wait;
    std::int64_t loose_last = k_default_loose_last;
};

} // namespace

Command register_gc(CLI::App& parent) {
    auto flags = std::make_shared<GcFlags>();
    CLI::App* app = parent.add_subcommand(
        "gc", "prune the history beyond the retention policy and delete what only pruned transactions needed "
              "(pruned transactions stay in the log but can no longer be undone)");
    app->add_option("--keep", flags->keep, "keep the newest N committed transactions, and all after them (0: none)")->check(k_count);
    app->add_option("--older-than", flags->older_than, "prune transactions older than this (30d, 12h, 90m, 2w)");
    app->add_option("--max-size", flags->max_size, "prune the oldest until stored files fit (10G, 500M, 2GiB)");
    app->add_flag("--dry-run", flags->dry_run, "say what would be pruned and freed, change nothing");
    app->add_flag("--set-policy", flags->set_policy,
                  "save --keep/--older-than/--max-size/--auto as the store's policy (then apply it)");
    app->add_option("--auto", flags->automatic, "on: apply the policy after every commit (the default); off: only here");
    app->add_option("--loose", flags->loose_last,
                    "keep the objects of the newest N transactions loose, pack the older ones (default 5)")
        ->check(k_count);
    app->add_option("--wait", flags->wait, "seconds to wait for another venvtx or uv holding the venv")
        ->check(k_wait);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                GcOptions options;
                options.keep_last = flags->keep;
                if (flags->older_than) {
                    options.older_than_s = parse_duration(*flags->older_than);
                }
                if (flags->max_size) {
                    options.max_bytes = parse_size(*flags->max_size);
                }
                if (flags->automatic) {
                    if (*flags->automatic != "on" && *flags->automatic != "off") {
                        throw usage_error("--auto takes on or off, not '" + *flags->automatic + "'");
                    }
                    options.automatic = *flags->automatic == "on";
                }
                options.set_policy = flags->set_policy;
                options.dry_run = flags->dry_run;
                options.wait_s = flags->wait.value_or(0.0);
                options.loose_last = flags->loose_last;
                Context context = make_context(global, out);
                return finish(out, collect_garbage(context, options));
            }};
}

} // namespace venvtx::cli
