// Types described by the runtime's own type records (runtime._type and its
// kind-specific tail), which a stripped binary keeps: a struct's fields
// (names, offsets, types), an array's length and element, a slice's or
// pointer's element, whether an interface has methods. Read as GoType, the
// same description DWARF gives, so that a user signature on a stripped binary
// may name `main.Order` (a struct by value) and have it laid out and decoded
// field by field. The record layouts (Go 1.19 to 1.27, amd64) are in
// docs/go-runtime.md, "Runtime type records".
//
// Names are the runtime's: package names, not paths (`http.Header`), as
// reflect prints them. A name two records share (two packages of one name)
// is ambiguous and not answered, except as reached from a field or element,
// where the record itself is known.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <string>
#include <string_view>
#include <unordered_map>

#include "binary/dwarf_info.hpp"

namespace goscope {

class GoBinary;

// A method's types from its receiver's method table (runtime.method.mtyp,
// a func type without the receiver): graph keys, for RuntimeTypeGraph::find.
struct MethodTypes {
  std::string receiver;              // `main.Server` or `*main.Server`
  std::vector<std::string> params;   // after the receiver
  std::vector<std::string> results;
  bool variadic = false;
};

class RuntimeTypeGraph {
 public:
  explicit RuntimeTypeGraph(const GoBinary& bin) : bin_(bin) {}

  // The type named `name` (as a user writes it, or as a record reached from
  // another names it), with every type it reaches; nullptr when the binary
  // has no record of that name, or more than one. Thread-safe; answers live
  // as long as the graph.
  const GoType* find(std::string_view name);

  // The types of method `method` of `receiver` (`main.Server`; `pointer`:
  // the method is declared on *main.Server), from the receiver's method
  // table, when the binary keeps them there: the linker keeps a method's
  // type for methods reachable through an interface or reflection, and
  // writes -1 for the others. nullopt when there is no such record, method,
  // or type.
  std::optional<MethodTypes> methodTypes(std::string_view receiver, bool pointer, std::string_view method);

  // The kinds of every record named `name` (none; more than one when two
  // packages of one name define it): runtimeTypesNamed's answer, from the
  // graph's index of the section (one pass for all names).
  std::vector<GoType::Kind> kindsNamed(std::string_view name);

 private:
  // Decodes the record at `addr` (and what it reaches) into types_; returns
  // its key there, empty when it is not a readable record.
  std::string decode(uint64_t addr, int depth);
  std::string nameAt(uint64_t addr) const;
  const GoType* findLocked(std::string_view name);
  // Every record in [types, etypes) by its name (extra star dropped), built
  // on the first search: one pass, instead of a search of the section per
  // name (a large binary's methods name thousands of receivers).
  void indexRecords();  // a runtime name record: flags, varint length, bytes

  const GoBinary& bin_;
  std::mutex mu_;
  std::map<std::string, GoType, std::less<>> types_;  // by key: the name, `name#N` for a second record of it
  std::map<uint64_t, std::string> keyOf_;             // record address -> key
  std::map<std::string, bool, std::less<>> searched_; // names looked up by search: found?
  std::map<const GoType*, uint64_t> recordOf_;        // -> its record's address
  std::optional<std::unordered_map<std::string, std::vector<uint64_t>>> byName_;
};

}  // namespace goscope
