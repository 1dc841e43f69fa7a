// A small command-line parser: each subcommand declares its options, and
// anything undeclared is a usage error with the subcommand's name in it.
// Long options take `--name value` or `--name=value`; short ones `-p 123`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope::cli {

struct OptionSpec {
  std::string longName;   // "json"
  char shortName = 0;     // 'p'
  bool takesValue = false;
  std::string help;       // one line
  bool repeatable = false;
};

class Args {
 public:
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // For a subcommand with -c: the words after `--`, a command to start as
  // -c would (`goscope count main.add -- ./prog args`); empty when none.
  // Elsewhere `--` only ends the options, and what follows is positional.
  const std::vector<std::string>& trailingCommand() const { return trailingCommand_; }
  bool hasDoubleDash() const { return doubleDash_; }

  Result<long long> getInt(const std::string& name, long long dflt, long long min, long long max) const;
  Result<double> getSeconds(const std::string& name, double dflt) const;

 private:
  friend Result<Args> parseArgs(const std::string&, const std::vector<OptionSpec>&, const std::vector<std::string>&);
  std::multimap<std::string, std::string> values_;
  std::vector<std::string> positional_;
  std::vector<std::string> trailingCommand_;
  bool doubleDash_ = false;
};

Result<Args> parseArgs(const std::string& subcommand, const std::vector<OptionSpec>& specs,
                       const std::vector<std::string>& argv);

std::string usageOf(const std::string& synopsis, const std::vector<OptionSpec>& specs);

}  // namespace goscope::cli
