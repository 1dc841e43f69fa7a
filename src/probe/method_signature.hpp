// Signatures a stripped binary already knows: a method's parameter and
// result types from its receiver's method table (the func type the runtime
// keeps for a method reachable through an interface or reflection: the same
// type the interface's method has), its receiver from its named type's
// record (binary/runtime_type_graph.hpp). Trusted only when the layout they
// make groups the argument words exactly as the runtime's own traceback
// layout of the function does (binary/arg_info.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/abi_layout.hpp"
#include "binary/arg_info.hpp"
#include "binary/runtime_type_graph.hpp"

namespace goscope {

// `main.(*Server).Handle` -> receiver `main.Server`, pointer, method `Handle`;
// `github.com/a/b.T.M` -> `b.T`, `M` (the runtime names types by package
// name). nullopt for functions that are not methods, closures inside
// methods (`T.M.func1`), wrappers' `-fm`, and generic methods.
struct MethodName {
  std::string receiver;
  bool pointer = false;
  std::string method;
};
std::optional<MethodName> parseMethodName(std::string_view funcName);

struct InferredSignature {
  std::string text;                 // `main.(*Server).Handle(recv *main.Server, p0 main.Request) (main.Response, error)`
  std::vector<ValueLayout> layout;  // receiver `recv`, parameters `p0`.., results unnamed
};

// The signature, or why not (nullopt with `why` set; empty `why`: not a
// method the binary describes, nothing to say). `argInfo`: the function's
// traceback layout, which the inferred layout must reproduce.
std::optional<InferredSignature> inferMethodSignature(RuntimeTypeGraph& graph, std::string_view funcName,
                                                      const std::optional<std::vector<ArgInfoItem>>& argInfo,
                                                      std::string& why);

// A method whose own types the binary does not keep (not reachable through
// an interface or reflection) but whose receiver's named type it describes:
// the receiver typed from that record, the other arguments left to the
// traceback layout. Trusted only when the receiver's type groups the
// layout's first argument exactly as the runtime does.
struct TypedReceiver {
  std::string type;    // `main.Point`, `*main.Server`
  ValueLayout layout;  // named `recv`, placed by the register ABI (it is the first argument)
  size_t words = 0;    // the traceback layout's words it covers
};
std::optional<TypedReceiver> inferReceiver(RuntimeTypeGraph& graph, std::string_view funcName,
                                           const std::vector<ArgInfoItem>& argInfo);

// The traceback layout the compiler would write for arguments of these
// shapes (cmd/compile/internal/ssagen/ssa.go, EmitArgInfo: words, groups,
// its limits of 10 components and 5 levels), offsets left 0.
std::vector<ArgInfoItem> argInfoFor(const std::vector<ShapePtr>& args);

}  // namespace goscope
