#include "corgy/io/json_lines.h"

#include <sstream>

namespace corgy {

void for_each_json_line(const std::string& text, const nlohmann::json& header, std::size_t most_line_bytes,
                        const std::function<bool(const nlohmann::json& line)>& take) {
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line.size() > most_line_bytes) return;
  if (nlohmann::json::parse(line, nullptr, false) != header) return;
  while (std::getline(lines, line)) {
    if (line.size() > most_line_bytes) continue;
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (parsed.is_discarded()) continue;
    if (!take(parsed)) return;
  }
}

}  // namespace corgy
