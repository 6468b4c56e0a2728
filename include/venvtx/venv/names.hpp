// Distribution names: PEP 503 normalization and shell-glob matching on normalized names.
#pragma once

#include <string>
#include <string_view>

namespace venvtx {

// Lowercase, with every run of '-', '_' and '.' folded to one '-' (PEP 503).
std::string normalize_name(std::string_view name);

// True when `name` matches the shell glob `pattern`, both compared in normalized form, so
// 'nvidia-*-cu13' matches 'nvidia_cudnn_cu13' and 'Flash_Attn' matches 'flash-attn'.
bool name_matches(std::string_view pattern, std::string_view name);

} // namespace venvtx
