// venvtx verify [--sample PCT]
#include "command.hpp"

#include "venvtx/ops/history_session.hpp"
#include "venvtx/upkeep/verify.hpp"

#include <memory>

namespace venvtx::cli {

Command register_verify(CLI::App& parent) {
    auto options = std::make_shared<VerifyOptions>();
    CLI::App* app = parent.add_subcommand("verify", "store objects vs their hashes; venv files vs RECORD");
    app->add_option("--sample", options->sample_percent, "re-hash only this percentage of store objects")
        ->check(CLI::Range(0.0, 100.0));
    app->add_option("--wait", options->wait_s, "seconds to wait for a venvtx changing the store (default: exit 5 at once)")
        ->check(k_wait);
    return {app, [options](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                std::optional<std::int64_t> outside;
                {
                    HistorySession session(context, false); // released before verify takes the locks
                    outside = session.check() ? session.check()->outside : std::nullopt;
                }
                if (outside) {
                    out.say("the venv was changed outside venvtx since the last command: recorded as entry " +
                            std::to_string(*outside) + " (`venvtx show " + std::to_string(*outside) + "`)");
                }
                VerifyReport report = verify(context, *options);
                if (out.json()) {
                    nlohmann::json problems = nlohmann::json::array();
                    for (const auto& problem : report.problems) {
                        problems.push_back({{"what", problem.what},
                                            {"path", problem.path},
                                            {"owner", problem.owner},
                                            {"detail", problem.detail}});
                    }
                    out.document(nlohmann::json({{"objects_checked", report.objects_checked},
                                                 {"packed_checked", report.packed_checked},
                                                 {"pending_checked", report.pending_checked},
                                                 {"files_checked", report.files_checked},
                                                 {"unfinished", report.unfinished},
                                                 {"problems", problems}})
                                     );
                } else {
                    for (const auto& problem : report.problems) {
                        out.verdict(problem.what + ": " + problem.path + " (" + problem.owner + ")" +
                                    (problem.detail.empty() ? "" : ": " + problem.detail));
                    }
                    for (std::int64_t tx : report.unfinished) {
                        out.verdict("unfinished: tx " + std::to_string(tx) +
                                    " (interrupted: `venvtx recover` puts the venv back)");
                    }
                    out.verdict(std::string(report.problems.empty() ? "ok" : "PROBLEMS") + ": " +
                                std::to_string(report.objects_checked) + " store objects, " +
                                std::to_string(report.packed_checked) + " packed objects, " +
                                std::to_string(report.pending_checked) + " unhashed removed files and " +
                                std::to_string(report.files_checked) + " venv files checked, " +
                                counted(report.problems.size(), "problem"));
                }
                return report.problems.empty() ? 0 : static_cast<int>(ExitCode::verify_failed);
            }};
}

} // namespace venvtx::cli
