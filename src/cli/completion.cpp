// completion_script: walk the app's commands and options, print them in each shell's idiom.
#include "completion.hpp"

#include "venvtx/core/error.hpp"

#include <map>
#include <sstream>
#include <vector>

namespace venvtx::cli {

namespace {

// What a word completes with: fixed words, or what `venvtx __complete DYNAMIC` lists.
struct Words {
    std::string fixed;
    std::string dynamic;  // "dists" or "entries"
};

const std::map<std::string, Words> k_option_words = {
    {"--preview", {"auto always never", ""}}, {"--capture", {"auto touch link", ""}},
    {"--installer", {"auto pip uv", ""}},    {"--gpus", {"auto none 1 2 4 8", ""}},
    {"--auto", {"on off", ""}},             {"--to", {"0", "entries"}},
    {"--at", {"now", "entries"}},           {"--kind", {"remove install run rollback outside stamp exec", ""}},
};

const std::map<std::string, Words> k_positional_words = {
    {"remove", {"", "dists"}},      {"why", {"", "dists"}},          {"rollback", {"", "entries"}},
    {"show", {"", "entries"}},      {"diff", {"now", "entries"}},     {"completion", {"bash zsh fish", ""}},
    {"guard", {"on off status", ""}},
    {"config", {"probe gpus preview probe-timeout hold keep older-than max-size auto-gc", ""}},
};

struct Flag {
    std::vector<std::string> names;  // --long and -s forms
    std::string help;
    bool takes_value = false;
    bool is_path = false;  // completed with directories
    Words words;           // its values, where they are known
};

struct Verb {
    std::string name;
    std::string help;
    std::vector<Flag> flags;
    Words words;  // its positional arguments
};

Words words_of(const std::map<std::string, Words>& table, const std::string& key) {
    auto found = table.find(key);
    return found == table.end() ? Words{} : found->second;
}

// `with_help`: -h/--help once, among the global flags, not again under each command.
std::vector<Flag> flags_of(const CLI::App& app, bool with_help) {
    std::vector<Flag> flags;
    for (const CLI::Option* option : app.get_options()) {
        if (!option->nonpositional() || (!with_help && option == app.get_help_ptr())) {
            continue;
        }
        Flag flag;
        for (const auto& name : option->get_lnames()) {
            flag.names.push_back("--" + name);
        }
        for (const auto& name : option->get_snames()) {
            flag.names.push_back("-" + name);
        }
        flag.help = option->get_description();
        flag.takes_value = option->get_expected_min() > 0;  // a flag expects nothing
        flag.is_path = flag.names.front() == "--venv" || flag.names.front() == "--store";
        flag.words = words_of(k_option_words, flag.names.front());
        flags.push_back(flag);
    }
    return flags;
}

std::vector<Verb> verbs_of(const CLI::App& app) {
    std::vector<Verb> verbs;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (command->get_group().empty()) {
            continue; // hidden: __complete
        }
        verbs.push_back({command->get_name(), command->get_description(), flags_of(*command, false),
                         words_of(k_positional_words, command->get_name())});
    }
    return verbs;
}

// The first sentence of a help text, for the shells that show one beside each word.
std::string short_help(const std::string& help) {
    constexpr std::size_t k_most = 80; // a shell's pager line, beside the word
    std::string text;
    int depth = 0; // asides in parentheses are left out
    for (char c : help.substr(0, help.find(';'))) {
        depth += c == '(' ? 1 : 0;
        if (depth == 0 && !(c == ' ' && !text.empty() && text.back() == ' ')) {
            if ((c == ',' || c == '.') && !text.empty() && text.back() == ' ') {
                text.pop_back(); // "auto (...), always" -> "auto, always"
            }
            text += c;
        }
        depth -= c == ')' && depth > 0 ? 1 : 0;
    }
    if (text.size() > k_most) {
        text = text.substr(0, text.rfind(' ', k_most));
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == ',' || text.back() == ':')) {
        text.pop_back();
    }
    return text;
}

std::string quoted(const std::string& text, char quote) {
    std::string out(1, quote);
    for (char c : text) {
        if (c == quote) {
            out += quote == '\'' ? "'\\''" : "\\\"";
        } else {
            out += c;
        }
    }
    return out + quote;
}

std::string words(const std::vector<Flag>& flags) {
    std::string text;
    for (const auto& flag : flags) {
        for (const auto& name : flag.names) {
            text += (text.empty() ? "" : " ") + name;
        }
    }
    return text;
}

// The words of `words` for bash: fixed ones, then what venvtx lists (ids only: before a tab).
std::string bash_words(const Words& words) {
    std::string text = words.fixed;
    if (!words.dynamic.empty()) {
        text += std::string(text.empty() ? "" : " ") + "$(venvtx \"${where[@]}\" __complete " + words.dynamic +
                " 2>/dev/null | cut -f1)";
    }
    return text;
}

std::string bash(const std::vector<Flag>& global, const std::vector<Verb>& verbs) {
    std::ostringstream out;
    std::string names;
    for (const auto& verb : verbs) {
        names += (names.empty() ? "" : " ") + verb.name;
    }
    std::map<std::string, std::string> values; // an option -> the words it takes
    for (const auto& verb : verbs) {
        for (const auto& flag : verb.flags) {
            if (!flag.words.fixed.empty() || !flag.words.dynamic.empty()) {
                values[flag.names.front()] = bash_words(flag.words);
            }
        }
    }
    out << "# bash completion for venvtx (generated by `venvtx completion bash`)\n"
        << "_venvtx() {\n"
        << "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command= i\n"
        << "    local -a where=()  # --venv and --store as typed: the venv whose names to offer\n"
        << "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        << "        case ${COMP_WORDS[i]} in\n"
        << "            --venv|--store) where+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
        << "            --) return ;;  # the installer's or the command's words: default completion\n"
        << "            -*) ;;\n"
        << "            *) [ -z \"$command\" ] && command=${COMP_WORDS[i]} ;;\n"
        << "        esac\n"
        << "    done\n"
        << "    case $prev in\n"
        << "        --venv|--store) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n";
    for (const auto& [option, words] : values) {
        out << "        " << option << ") COMPREPLY=($(compgen -W \"" << words << "\" -- \"$cur\")); return ;;\n";
    }
    out << "    esac\n"
        << "    local choices\n"
        << "    case $command in\n"
        << "        '') choices=" << quoted(names + " " + words(global), '\'') << " ;;\n";
    for (const auto& verb : verbs) {
        out << "        " << verb.name << ") choices=" << quoted(words(verb.flags) + " " + words(global), '\'');
        if (!verb.words.fixed.empty() || !verb.words.dynamic.empty()) {
            out << "; [[ $cur == -* ]] || choices=\"" << bash_words(verb.words) << "\"";
        }
        out << " ;;\n";
    }
    out << "    esac\n"
        << "    COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\"))\n"
        << "}\n"
        << "complete -o default -F _venvtx venvtx\n";
    return out.str();
}

// `text` inside a zsh or bash single-quoted word.
std::string single_quoted_inner(const std::string& text) {
    std::string out;
    for (char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out;
}

// The action that completes `words` in zsh.
std::string zsh_action(const Words& words) {
    if (words.dynamic.empty()) {
        return "(" + words.fixed + ")";
    }
    // In braces: run as written, without the options _arguments would add to a plain call.
    return "{_venvtx_words " + words.dynamic + (words.fixed.empty() ? "" : " " + words.fixed) + "}";
}

std::string zsh_spec(const Flag& flag) {
    std::string help = short_help(flag.help);
    for (char& c : help) {
        c = c == '[' ? '(' : c == ']' ? ')' : c;
    }
    std::string names = flag.names.size() == 1 ? flag.names.front() : "{" + flag.names.front();
    for (std::size_t i = 1; i < flag.names.size(); ++i) {
        names += "," + flag.names[i];
    }
    names += flag.names.size() == 1 ? "" : "}";
    std::string value;
    if (flag.takes_value) {
        value = flag.is_path                                                 ? ":directory:_files -/"
                : !flag.words.fixed.empty() || !flag.words.dynamic.empty() ? ":value:" + zsh_action(flag.words)
                                                                           : ":value: ";
    }
    return names + "'[" + single_quoted_inner(help) + "]" + single_quoted_inner(value) + "'";
}

std::string zsh(const std::vector<Flag>& global, const std::vector<Verb>& verbs) {
    std::ostringstream out;
    out << "#compdef venvtx\n# zsh completion for venvtx (generated by `venvtx completion zsh`)\n"
        << "# The words venvtx lists (distributions, entries as ID<TAB>what), plus any fixed ones.\n"
        << "_venvtx_words() {\n"
        << "    local -a items\n"
        << "    items=(${(f)\"$(venvtx $_venvtx_where __complete $1 2>/dev/null)\"})\n"
        << "    items=(${items//$'\\t'/:} ${@:2})\n"
        << "    _describe -t values 'value' items\n"
        << "}\n"
        << "_venvtx() {\n    local -a global_flags commands _venvtx_where\n    local i\n"
        << "    for ((i = 1; i < $#words; i++)); do\n"
        << "        [[ $words[i] == --venv || $words[i] == --store ]] && _venvtx_where+=($words[i] $words[i+1])\n"
        << "    done\n"
        << "    global_flags=(\n";
    for (const auto& flag : global) {
        out << "        " << zsh_spec(flag) << "\n";
    }
    out << "    )\n    commands=(\n";
    for (const auto& verb : verbs) {
        std::string help = short_help(verb.help);
        for (char& c : help) {
            c = c == ':' ? ' ' : c;
        }
        out << "        '" << verb.name << ":" << single_quoted_inner(help) << "'\n";
    }
    out << "    )\n"
        << "    _arguments -C $global_flags '1:command:->command' '*::argument:->argument' && return\n"
        << "    case $state in\n"
        << "        command) _describe 'venvtx command' commands ;;\n"
        << "        argument)\n"
        << "            case $words[1] in\n";
    for (const auto& verb : verbs) {
        out << "                " << verb.name << ") _arguments $global_flags";
        for (const auto& flag : verb.flags) {
            out << " " << zsh_spec(flag);
        }
        bool known = !verb.words.fixed.empty() || !verb.words.dynamic.empty();
        out << " '*:argument:" << (known ? single_quoted_inner(zsh_action(verb.words)) : "_files") << "' ;;\n";
    }
    out << "            esac ;;\n    esac\n}\n_venvtx \"$@\"\n";
    return out.str();
}

// `text` as one fish single-quoted word (fish escapes a quote inside with a backslash).
std::string fish_quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        out += c == '\'' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    }
    return out + "'";
}

std::string fish_words(const Words& words) {
    std::string text = words.fixed;
    if (!words.dynamic.empty()) {
        text += std::string(text.empty() ? "" : " ") + "(__venvtx_words " + words.dynamic + ")";
    }
    return text;
}

std::string fish_line(const Flag& flag, const std::string& condition) {
    std::string line = "complete -c venvtx";
    if (!condition.empty()) {
        line += " -n " + fish_quoted(condition);
    }
    for (const auto& name : flag.names) {
        line += name.size() > 2 ? " -l " + name.substr(2) : " -s " + name.substr(1);
    }
    if (flag.takes_value) {
        line += flag.is_path                                                 ? " -r -a '(__fish_complete_directories)'"
                : !flag.words.fixed.empty() || !flag.words.dynamic.empty() ? " -r -f -a " + fish_quoted(fish_words(flag.words))
                                                                           : " -r";
    }
    return line + " -d " + fish_quoted(short_help(flag.help)) + "\n";
}

std::string fish(const std::vector<Flag>& global, const std::vector<Verb>& verbs) {
    std::ostringstream out;
    std::string names;
    for (const auto& verb : verbs) {
        names += (names.empty() ? "" : " ") + verb.name;
    }
    out << "# fish completion for venvtx (generated by `venvtx completion fish`)\n"
        << "# What venvtx lists (distributions; entries as ID<TAB>what) for the venv named on the line.\n"
        << "function __venvtx_words\n"
        << "    set -l tokens (commandline -opc)\n"
        << "    set -l where\n"
        << "    for i in (seq (count $tokens))\n"
        << "        if contains -- $tokens[$i] --venv --store; and test $i -lt (count $tokens)\n"
        << "            set -a where $tokens[$i] $tokens[(math $i + 1)]\n"
        << "        end\n"
        << "    end\n"
        << "    venvtx $where __complete $argv 2>/dev/null\n"
        << "end\n";
    for (const auto& flag : global) {
        out << fish_line(flag, "");
    }
    for (const auto& verb : verbs) {
        out << "complete -c venvtx -f -n 'not __fish_seen_subcommand_from " << names << "' -a " << verb.name
            << " -d " << fish_quoted(short_help(verb.help)) << "\n";
        for (const auto& flag : verb.flags) {
            out << fish_line(flag, "__fish_seen_subcommand_from " + verb.name);
        }
        if (!verb.words.fixed.empty() || !verb.words.dynamic.empty()) {
            out << "complete -c venvtx -f -n " << fish_quoted("__fish_seen_subcommand_from " + verb.name) << " -a "
                << fish_quoted(fish_words(verb.words)) << "\n";
        }
    }
    return out.str();
}

} // namespace

std::string completion_script(const CLI::App& app, const std::string& shell) {
    std::vector<Flag> global = flags_of(app, true);
    std::vector<Verb> verbs = verbs_of(app);
    if (shell == "bash") {
        return bash(global, verbs);
    }
    if (shell == "zsh") {
        return zsh(global, verbs);
    }
    if (shell == "fish") {
        return fish(global, verbs);
    }
    throw usage_error("no completion for shell '" + shell + "' (bash, zsh or fish)");
}

} // namespace venvtx::cli
