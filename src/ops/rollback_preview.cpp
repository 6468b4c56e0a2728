// A rollback's after-state in a preview: the upper layer filled, the removals made in the view.
#include "venvtx/ops/rollback_preview.hpp"

#include "venvtx/core/fs.hpp"
#include "venvtx/store/entry_order.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/txn/materialize.hpp"

#include <map>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

class UpperLayer {
public:
    UpperLayer(const Context& context, Store& store, const TransactionPlan& plan, const PreviewArea& area)
        : m_context(context), m_store(store), m_plan(plan), m_upper(area.upper()) {
        for (const auto& entry : plan.entries) {
            if (entry.after.type == NodeType::dir) {
                m_dir_modes[entry.path] = entry.after.mode;
            }
        }
    }

    void fill() {
        std::vector<Entry> entries = m_plan.entries;
        for (Entry* entry : dirs_shallowest_first(entries)) {
            if (entry->after.type == NodeType::dir) {
                make_dir(entry->path);
            }
        }
        for (const auto& entry : entries) {
            place(entry);
        }
        for (auto it = m_made.rbegin(); it != m_made.rend(); ++it) {
            if ((it->second & S_IRWXU) != S_IRWXU) {
                Fs::instance().chmod(m_upper / it->first, it->second);
            }
        }
    }

private:
    // A directory of the after-state in the layer, with its ancestors (a merged directory takes
    // its attributes from the layer's: each gets the mode it has, or will have, in the venv).
    void make_dir(const std::string& path) {
        if (path.empty() || m_made_set.count(path) != 0) {
            return;
        }
        make_dir(stdfs::path(path).parent_path().string());
        auto planned = m_dir_modes.find(path);
        mode_t mode = planned != m_dir_modes.end() ? planned->second : observe_node(m_context.layout.root / path).mode;
        Fs::instance().mkdir(m_upper / path, mode | S_IRWXU);
        m_made.emplace_back(path, mode);
        m_made_set.insert(path);
    }

    void place(const Entry& entry) {
        const NodeState& target = entry.after;
        if (target.type == NodeType::absent || target.type == NodeType::dir) {
            return;
        }
        make_dir(stdfs::path(entry.path).parent_path().string());
        Fs& fs = Fs::instance();
        stdfs::path path = m_upper / entry.path;
        if (target.type == NodeType::symlink) {
            fs.symlink(target.link_target, path);
        } else if (target.type == NodeType::special) {
            if (target.link_target == "fifo") {
                fs.mkfifo(path, target.mode);
            }
        } else {
            auto pending = m_plan.pending.find(entry.path);
            stdfs::path source = target.object.empty() && pending != m_plan.pending.end()
                                     ? pending->second.staged
                                     : m_store.objects().object_path(target.object);
            fs.copy_file(source, path, target.mode);
            fs.chmod(path, target.mode);
            fs.set_mtime(path, target.mtime_ns);
        }
    }

    const Context& m_context;
    Store& m_store;
    const TransactionPlan& m_plan;
    stdfs::path m_upper;
    std::map<std::string, mode_t> m_dir_modes;
    std::vector<std::pair<std::string, mode_t>> m_made;
    std::set<std::string> m_made_set;
};

} // namespace

void fill_upper_layer(const Context& context, Store& store, const TransactionPlan& plan, const PreviewArea& area) {
    unpack_objects(store, objects_needed(plan.entries, Side::after), PackReading::strict);
    UpperLayer(context, store, plan, area).fill();
}

nlohmann::json remove_in_view(const Context& context, const TransactionPlan& plan) {
    std::vector<Entry> entries = plan.entries;
    Fs& fs = Fs::instance();
    for (const auto& entry : entries) {
        stdfs::path path = context.layout.root / entry.path;
        if (entry.after.type == NodeType::absent && is_leaf(observe_node(path).type)) {
            fs.unlink(path);
        }
    }
    for (Entry* entry : dirs_deepest_first(entries)) {
        stdfs::path path = context.layout.root / entry->path;
        if (entry->after.type == NodeType::absent && observe_node(path).type == NodeType::dir) {
            fs.rmdir(path);
        }
    }
    return nlohmann::json::object();
}

} // namespace venvtx
