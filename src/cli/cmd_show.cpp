// venvtx show TX
#include "command.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/ops/history_session.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/store/store.hpp"

#include <memory>

namespace venvtx::cli {

Command register_show(CLI::App& parent) {
    auto asked = std::make_shared<std::optional<std::int64_t>>();
    CLI::App* app = parent.add_subcommand("show", "one entry of the history (the newest by default): packages, files, "
                                                  "probe reports; for a run, what it loaded");
    app->add_option("tx", *asked, "entry id (see `venvtx log`; default: the newest)")->check(k_transaction_id);
    return {app, [asked](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                HistorySession session(context, false); // records a change made outside venvtx first
                std::string which = *asked ? "entry " + std::to_string(**asked) : std::string("entry");
                nlohmann::json details = *asked ? nlohmann::json{{"tx", **asked}} : nlohmann::json::object();
                if (!session.has_store()) {
                    throw Error(ExitCode::usage, "not_found", "no " + which + ": no venvtx history yet", details);
                }
                Store& store = session.store();
                std::optional<TransactionRecord> record;
                if (*asked) {
                    record = store.history().find(**asked);
                } else if (auto newest = store.history().list(1); !newest.empty()) {
                    record = newest.front();
                }
                if (!record) {
                    throw Error(ExitCode::usage, "not_found", "no " + which + " (see `venvtx log`)", details);
                }
                const std::int64_t id = record->id;
                std::vector<Entry> entries = store.history().entries(id);
                // Where the bytes that undo it are: loose objects, packs (read on a rollback), or gone.
                std::set<std::string> objects;
                for (const auto& entry : entries) {
                    if (!entry.before.object.empty()) {
                        objects.insert(entry.before.object);
                    }
                }
                std::map<std::string, std::int64_t> packed = packed_objects(store, objects);
                std::set<std::int64_t> packs;
                std::size_t loose = 0;
                std::size_t held = 0;
                for (const auto& hex : objects) {
                    loose += store.objects().has(hex) ? 1 : 0;
                    held += store.objects().has(hex) || packed.count(hex) != 0 ? 1 : 0;
                    if (packed.count(hex) != 0) {
                        packs.insert(packed[hex]);
                    }
                }
                std::size_t unhashed = pending_of(store.db(), id).size();
                nlohmann::json stored = {{"objects", objects.size()}, {"loose", loose}, {"packed", packed.size()},
                                         {"packs", packs.size()}, {"unhashed", unhashed}};
                if (out.json()) {
                    nlohmann::json paths = nlohmann::json::array();
                    for (const auto& entry : entries) {
                        paths.push_back({{"path", entry.path},
                                         {"before", node_type_name(entry.before.type)},
                                         {"after", node_type_name(entry.after.type)}});
                    }
                    out.document({{"transaction", transaction_json(*record)}, {"paths", paths}, {"stored", stored}});
                } else {
                    out.verdict(transaction_details(*record, entries));
                    if (unhashed > 0) {
                        out.say("stored: " + counted(unhashed, "removed file") + " kept as they were moved, not "
                                "hashed yet (a rollback renames them back; `venvtx gc` stores them as objects)" +
                                (objects.empty() ? std::string() : ", and " + counted(objects.size(), "object")));
                    } else if (objects.empty() && record->undone_by && record->kind == "remove" &&
                               record->files.removed > 0) {
                        out.say("stored: nothing; tx " + std::to_string(*record->undone_by) +
                                " renamed its removed files back into the venv when it undid it");
                    } else if (!objects.empty() && record->undone_by && held < objects.size()) {
                        // A rollback renamed them back into the venv (zero copy): nothing left to store.
                        out.say("stored: " + (held == 0 ? std::string("none") : std::to_string(held)) + " of its " +
                                counted(objects.size(), "object") + "; tx " + std::to_string(*record->undone_by) +
                                " moved " + (held == 0 ? "them" : "the others") + " back into the venv when it undid it");
                    } else if (!objects.empty()) {
                        out.say("stored: " + counted(objects.size(), "object") + " to undo it, " +
                                std::to_string(loose) + " loose, " + std::to_string(packed.size()) + " packed in " +
                                counted(packs.size(), "pack"));
                    }
                }
                return 0;
            }};
}

} // namespace venvtx::cli
