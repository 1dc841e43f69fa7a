#include "cli/args.hpp"

#include "cli/help_text.hpp"

#include <charconv>
#include <cmath>

namespace goscope::cli {

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> out;
  auto [b, e] = values_.equal_range(name);
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

Result<long long> Args::getInt(const std::string& name, long long dflt, long long min, long long max) const {
  auto v = get(name);
  if (!v) return dflt;
  long long out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size() || out < min || out > max)
    return fail(ErrorKind::Usage, "--" + name + " wants a whole number from " + std::to_string(min) + " to " +
                                      std::to_string(max) + ", not '" + *v + "'");
  return out;
}

Result<double> Args::getSeconds(const std::string& name, double dflt) const {
  auto v = get(name);
  if (!v) return dflt;
  try {
    size_t used = 0;
    double d = std::stod(*v, &used);
    if (used == v->size() && std::isfinite(d) && d > 0) return d;
  } catch (...) {
  }
  return fail(ErrorKind::Usage, "--" + name + " wants a positive number of seconds, not '" + *v + "'");
}

Result<Args> parseArgs(const std::string& sub, const std::vector<OptionSpec>& specs,
                       const std::vector<std::string>& argv) {
  Args a;
  auto findLong = [&](const std::string& n) -> const OptionSpec* {
    for (const auto& s : specs)
      if (s.longName == n) return &s;
    return nullptr;
  };
  auto findShort = [&](char c) -> const OptionSpec* {
    for (const auto& s : specs)
      if (s.shortName == c) return &s;
    return nullptr;
  };
  bool onlyPositional = false;
  const bool takesCommand = findLong("command") != nullptr;
  for (size_t i = 0; i < argv.size(); i++) {
    const std::string& arg = argv[i];
    if (onlyPositional && takesCommand) {
      a.trailingCommand_.push_back(arg);
      continue;
    }
    if (onlyPositional || arg.size() < 2 || arg[0] != '-' || (arg[1] != '-' && std::isdigit(static_cast<unsigned char>(arg[1])))) {
      a.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositional = true;
      a.doubleDash_ = true;
      continue;
    }
    const OptionSpec* spec = nullptr;
    std::optional<std::string> inlineValue;
    if (arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        inlineValue = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      spec = findLong(name);
    } else if (arg.size() >= 2) {
      spec = findShort(arg[1]);
      if (spec && arg.size() > 2) inlineValue = arg.substr(2);
    }
    if (!spec) return fail(ErrorKind::Usage, sub + ": unknown option " + arg, "see goscope " + sub + " --help");
    if (!spec->repeatable && a.has(spec->longName))
      return fail(ErrorKind::Usage, sub + ": --" + spec->longName + " given twice");
    if (spec->takesValue) {
      if (!inlineValue) {
        if (i + 1 >= argv.size())
          return fail(ErrorKind::Usage, sub + ": --" + spec->longName + " needs a value");
        inlineValue = argv[++i];
      }
      // An empty value (`--read ''`) is a usage error here, not a name
      // looked up later ("no package variable  in ...", exit 5). -c has its
      // own message for it.
      if (inlineValue->empty() && spec->longName != "command")
        return fail(ErrorKind::Usage, sub + ": --" + spec->longName + " needs a value, not an empty string");
      a.values_.emplace(spec->longName, *inlineValue);
    } else {
      if (inlineValue) return fail(ErrorKind::Usage, sub + ": --" + spec->longName + " takes no value");
      a.values_.emplace(spec->longName, "");
    }
  }
  return a;
}

std::string usageOf(const std::string& synopsis, const std::vector<OptionSpec>& specs) {
  std::string out = "usage: " + synopsis + "\n";
  for (const auto& s : specs) {
    std::string left = "  ";
    left += s.shortName ? std::string("-") + s.shortName + ", " : "    ";
    left += "--" + s.longName + (s.takesValue ? " " + valuePlaceholder(s.longName) : "");
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + s.help + "\n";
  }
  // "goscope SUB ...": the examples of SUB follow the options.
  const std::string prefix = "goscope ";
  if (synopsis.starts_with(prefix)) {
    const std::string sub = synopsis.substr(prefix.size(), synopsis.find(' ', prefix.size()) - prefix.size());
    if (std::string ex = helpExamples(sub); !ex.empty()) out += "\n" + ex;
  }
  return out;
}

}  // namespace goscope::cli
