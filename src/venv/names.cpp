// PEP 503 normalization and glob matching of distribution names.
#include "venvtx/venv/names.hpp"

#include <cctype>
#include <fnmatch.h>

namespace venvtx {

std::string normalize_name(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    bool in_separator_run = false;
    for (char c : name) {
        if (c == '-' || c == '_' || c == '.') {
            if (!in_separator_run) {
                out.push_back('-');
            }
            in_separator_run = true;
        } else {
            out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
            in_separator_run = false;
        }
    }
    return out;
}

bool name_matches(std::string_view pattern, std::string_view name) {
    // Normalizing the pattern keeps glob characters (*?[]) and folds separators the same way.
    return ::fnmatch(normalize_name(pattern).c_str(), normalize_name(name).c_str(), 0) == 0;
}

} // namespace venvtx
