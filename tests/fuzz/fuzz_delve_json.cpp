// Fuzz target: JSON from dlv, decoded into goscope's mirror of Delve's types
// (rpc/delve_types.cpp) and rendered the way `goscope read` shows values
// (backend/delve/values_from_delve.cpp, value/render.cpp); an error string goes through delveError.
// Input: any JSON text; a recorded reply ({"id","result","error"}) or request
// ({"method","params":[...]}) is unwrapped first, as the client does.
// Property checked besides "no crash, no UB": whatever decodes re-encodes to
// JSON that decodes to the same value (encode(decode(encode(x))) == encode(x)).
#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backend/delve/values_from_delve.hpp"
#include "value/render.hpp"
#include "rpc/delve_errors.hpp"
#include "rpc/delve_types.hpp"

using namespace goscope;
namespace json = boost::json;

namespace {

template <class T>
void roundTrip(const json::value& v) {
  T x{};
  if (!rpc::decodeInto(v, x)) return;
  json::value once = json::value_from(x);
  T y{};
  if (!rpc::decodeInto(once, y)) __builtin_trap();  // our own encoding must decode
  if (json::value_from(y) != once) __builtin_trap();
}

void render(const rpc::Variable& v) {
  const goscope::Value value = goscope::valueFromDelve(v);
  (void)goscope::renderText(value);
  (void)json::serialize(goscope::renderJson(value));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boost::system::error_code ec;
  json::parse_options opt;
  opt.max_depth = 64;  // more than any Delve reply at the LoadConfig goscope asks for
  json::value doc = json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec, {}, opt);
  if (ec) return 0;

  const json::value* body = &doc;
  if (const auto* o = doc.if_object()) {
    if (const auto* r = o->if_contains("result")) body = r;
    else if (const auto* p = o->if_contains("params"); p && p->is_array() && !p->get_array().empty())
      body = &p->get_array()[0];
    if (const auto* e = o->if_contains("error"); e && e->is_string()) {
      std::string_view msg = e->get_string();
      for (const char* method : {"Eval", "Set", "CreateBreakpoint", "FindLocation", "Command"})
        (void)rpc::delveError(method, msg);
    }
  }

  roundTrip<rpc::StateOut>(*body);
  roundTrip<rpc::CommandOut>(*body);
  roundTrip<rpc::FindLocationOut>(*body);
  roundTrip<rpc::CreateBreakpointOut>(*body);
  roundTrip<rpc::ClearBreakpointOut>(*body);
  roundTrip<rpc::ListBreakpointsOut>(*body);
  roundTrip<rpc::EvalOut>(*body);
  roundTrip<rpc::ListGoroutinesOut>(*body);
  roundTrip<rpc::StacktraceOut>(*body);
  roundTrip<rpc::ListFunctionsOut>(*body);
  roundTrip<rpc::ListPackageVarsOut>(*body);
  roundTrip<rpc::GetVersionOut>(*body);
  roundTrip<rpc::DetachOut>(*body);
  roundTrip<rpc::CreateBreakpointIn>(*body);
  roundTrip<rpc::EvalIn>(*body);
  roundTrip<rpc::DebuggerCommand>(*body);

  // Values as `goscope read` renders them: an Eval reply's variable, any
  // variable lists, or the body itself taken for one variable.
  if (auto e = rpc::decode<rpc::EvalOut>(*body); e && e->variable) render(*e->variable);
  if (auto l = rpc::decode<rpc::ListPackageVarsOut>(*body))
    for (const auto& v : l->variables) render(v);
  if (auto v = rpc::decode<rpc::Variable>(*body)) render(*v);
  return 0;
}
