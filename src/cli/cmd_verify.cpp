// venvtx verify [--sample PCT]
#include "command.hpp"

#include "venvtx/txn/verify.hpp"

#include <memory>

namespace venvtx::cli {

Command register_verify(CLI::App& parent) {
    auto sample = std::make_shared<double>(100);
    CLI::App* app = parent.add_subcommand("verify", "store objects vs their hashes; venv files vs RECORD");
    app->add_option("--sample", *sample, "re-hash only this percentage of store objects")
        ->check(CLI::Range(0.0, 100.0));
    return {app, [sample](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                VerifyReport report = verify(context, VerifyOptions{*sample});
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
                                     .dump(2));
                } else {
                    for (const auto& problem : report.problems) {
                        out.verdict(problem.what + ": " + problem.path + " (" + problem.owner + ")" +
                                    (problem.detail.empty() ? "" : ": " + problem.detail));
                    }
                    for (std::int64_t tx : report.unfinished) {
                        out.verdict("unfinished: tx " + std::to_string(tx) + " (another venvtx running now, or "
                                    "interrupted: `venvtx recover` puts the venv back)");
                    }
                    out.verdict(std::string(report.problems.empty() ? "ok" : "PROBLEMS") + ": " +
                                std::to_string(report.objects_checked) + " store objects, " +
                                std::to_string(report.packed_checked) + " packed objects, " +
                                std::to_string(report.pending_checked) + " unhashed removed files and " +
                                std::to_string(report.files_checked) + " venv files checked, " +
                                std::to_string(report.problems.size()) + " problem(s)");
                }
                return report.problems.empty() ? 0 : static_cast<int>(ExitCode::verify_failed);
            }};
}

} // namespace venvtx::cli
