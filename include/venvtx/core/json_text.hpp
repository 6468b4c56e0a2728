// JSON text for any bytes: strings that are not UTF-8 never make serialization throw.
//
// The one escaping (docs/design.md, "The contract"): each byte that is not part of valid UTF-8
// is written as the escape \udc80..\udcff (U+DC00 plus the byte), PEP 383's "surrogateescape";
// in Python, os.fsencode(json.loads(text)) gives the original bytes back, so paths are lossless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace venvtx {

// `value` as JSON text, indented by `indent` spaces (-1: on one line).
std::string json_text(const nlohmann::json& value, int indent = 2);

// For text venvtx keeps for itself (the index's argv, probe reports, verdict lists): bytes that
// are not UTF-8 become U+FFFD, so a stored document always parses again.
std::string stored_json_text(const nlohmann::json& value);

// `bytes` with each byte that is not part of valid UTF-8 replaced by U+FFFD: for text that is
// only informational and must always serialize (a distribution's INSTALLER, name, version).
std::string valid_utf8(const std::string& bytes);

} // namespace venvtx
