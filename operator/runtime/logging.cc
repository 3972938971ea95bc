#include "operator/runtime/logging.h"

#include <chrono>
#include <ctime>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace lockstep::runtime {
namespace {

void appendEscaped(spdlog::memory_buf_t& dest, spdlog::string_view_t s) {
  static const char* kHex = "0123456789abcdef";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        dest.append(std::string_view("\\\""));
        break;
      case '\\':
        dest.append(std::string_view("\\\\"));
        break;
      case '\n':
        dest.append(std::string_view("\\n"));
        break;
      case '\r':
        dest.append(std::string_view("\\r"));
        break;
      case '\t':
        dest.append(std::string_view("\\t"));
        break;
      default:
        if (c < 0x20) {
          char esc[7] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15], 0};
          dest.append(std::string_view(esc, 6));
        } else {
          dest.push_back(ch);
        }
    }
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    auto us = duration_cast<microseconds>(msg.time.time_since_epoch()).count();
    auto secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[64];
    size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(ts + n, sizeof ts - n, ".%06lldZ", static_cast<long long>(us % 1000000));
    dest.append(std::string_view("{\"ts\":\""));
    dest.append(std::string_view(ts));
    dest.append(std::string_view("\",\"level\":\""));
    auto level = spdlog::level::to_string_view(msg.level);
    dest.append(level.data(), level.data() + level.size());
    dest.append(std::string_view("\",\"logger\":\""));
    appendEscaped(dest, msg.logger_name);
    dest.append(std::string_view("\",\"msg\":\""));
    appendEscaped(dest, msg.payload);
    dest.append(std::string_view("\"}\n"));
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> makeJsonFormatter() { return std::make_unique<JsonFormatter>(); }

Status configureLogging(const LogOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off") {
    return invalidArgument("unknown log level \"" + options.level + "\"");
  }
  auto logger = std::make_shared<spdlog::logger>("lockstep",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (options.json) {
    logger->set_formatter(makeJsonFormatter());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace lockstep::runtime
