#include "rpc/delve_client.hpp"

#include "rpc/delve_errors.hpp"

namespace goscope::rpc {

DelveClient::DelveClient(std::unique_ptr<JsonRpcClient> rpc, Millis timeout)
    : rpc_(std::move(rpc)), timeout_(timeout) {}

namespace {

template <class Out>
Result<Out> unpack(const char* method, Result<RpcReply> reply) {
  if (!reply) return reply.failure();
  if (reply->error) return fail(delveError(method, *reply->error));
  return decode<Out>(reply->result);
}

}  // namespace

template <class Out, class In>
Result<Out> DelveClient::call(const char* method, const In& in, Millis timeout, bool interruptible) {
  return unpack<Out>(method, rpc_->call(std::string("RPCServer.") + method, boost::json::value_from(in), timeout,
                                        interruptible));
}

Result<DebuggerState> DelveClient::state(bool nonBlocking, bool interruptible, std::optional<Millis> timeout) {
  auto out = call<StateOut>("State", StateIn{nonBlocking}, timeout.value_or(timeout_), interruptible);
  if (!out) return out.failure();
  if (!out->state) return fail(ErrorKind::External, "Delve State: the reply has no state");
  return std::move(*out->state);
}

Result<DebuggerState> DelveClient::command(const DebuggerCommand& cmd, Millis timeout, bool interruptible) {
  auto out = call<CommandOut>("Command", cmd, timeout, interruptible);
  if (!out) return out.failure();
  return std::move(out->state);
}

Result<uint64_t> DelveClient::startCommand(const DebuggerCommand& cmd) {
  return rpc_->send("RPCServer.Command", boost::json::value_from(cmd));
}

Result<DebuggerState> DelveClient::finishCommand(uint64_t id, Millis timeout, bool interruptible) {
  auto out = unpack<CommandOut>("Command", rpc_->wait(id, timeout, interruptible));
  if (!out) return out.failure();
  return std::move(out->state);
}

Result<std::vector<Location>> DelveClient::findLocation(const FindLocationIn& in) {
  auto out = call<FindLocationOut>("FindLocation", in, timeout_);
  if (!out) return out.failure();
  return std::move(out->locations);
}

Result<Breakpoint> DelveClient::createBreakpoint(const CreateBreakpointIn& in) {
  auto out = call<CreateBreakpointOut>("CreateBreakpoint", in, timeout_);
  if (!out) return out.failure();
  return std::move(out->breakpoint);
}

Result<Breakpoint> DelveClient::clearBreakpoint(int64_t id, bool interruptible) {
  auto out = call<ClearBreakpointOut>("ClearBreakpoint", ClearBreakpointIn{id, {}}, timeout_, interruptible);
  if (!out) return out.failure();
  if (!out->breakpoint) return Breakpoint{};
  return std::move(*out->breakpoint);
}

Result<std::vector<Breakpoint>> DelveClient::listBreakpoints(bool all, bool interruptible) {
  auto out = call<ListBreakpointsOut>("ListBreakpoints", ListBreakpointsIn{all}, timeout_, interruptible);
  if (!out) return out.failure();
  return std::move(out->breakpoints);
}

Result<Variable> DelveClient::eval(const EvalIn& in) {
  auto out = call<EvalOut>("Eval", in, timeout_);
  if (!out) return out.failure();
  if (!out->variable) return fail(ErrorKind::External, "Delve Eval: the reply has no variable");
  return std::move(*out->variable);
}

Result<void> DelveClient::set(const SetIn& in) {
  auto out = call<SetOut>("Set", in, timeout_);
  if (!out) return out.failure();
  return {};
}

Result<ListGoroutinesOut> DelveClient::listGoroutines(const ListGoroutinesIn& in) {
  return call<ListGoroutinesOut>("ListGoroutines", in, timeout_);
}

Result<std::vector<Stackframe>> DelveClient::stacktrace(const StacktraceIn& in) {
  auto out = call<StacktraceOut>("Stacktrace", in, timeout_);
  if (!out) return out.failure();
  return std::move(out->locations);
}

Result<std::vector<std::string>> DelveClient::listFunctions(const std::string& filter) {
  auto out = call<ListFunctionsOut>("ListFunctions", ListFunctionsIn{filter}, timeout_);
  if (!out) return out.failure();
  return std::move(out->funcs);
}

Result<std::vector<Variable>> DelveClient::listPackageVars(const std::string& filter, const LoadConfig& cfg) {
  auto out = call<ListPackageVarsOut>("ListPackageVars", ListPackageVarsIn{filter, cfg}, timeout_);
  if (!out) return out.failure();
  return std::move(out->variables);
}

Result<GetVersionOut> DelveClient::getVersion() { return call<GetVersionOut>("GetVersion", GetVersionIn{}, timeout_); }

Result<void> DelveClient::detach(Millis timeout) {
  // Never interruptible: a half-done detach is what hurts the target.
  auto out = call<DetachOut>("Detach", DetachIn{false}, timeout, /*interruptible=*/false);
  if (!out) return out.failure();
  return {};
}

}  // namespace goscope::rpc
