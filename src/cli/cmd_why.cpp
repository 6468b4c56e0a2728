// venvtx why NAME
#include "command.hpp"

#include "venvtx/ops/why.hpp"

#include <memory>

namespace venvtx::cli {

Command register_why(CLI::App& parent) {
    auto name = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand(
        "why", "for a soname, a file or a distribution: who provides it, who needs it, what breaks without it");
    app->add_option("name", *name, "e.g. libnccl.so.2, torch, or a path in the venv")->required();
    return {app, [name](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                if (name->empty()) {
                    throw usage_error("why needs a name: a soname, a file in the venv or a distribution");
                }
                WhyAnswer answer = explain(context, *name);
                if (out.json()) {
                    out.document(answer.json);
                } else {
                    std::string text = answer.text;
                    text.pop_back();
                    out.verdict(text);
                }
                return 0;
            }};
}

} // namespace venvtx::cli
