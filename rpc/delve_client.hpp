// One method per Delve RPC, each a call("Method", in) -> out like Delve's own
// service/rpc2 client. No policy lives here: which call is safe when (never
// halt a stopped target, nothing but State/Command while it runs) is the
// session's job (src/backend/delve/delve_session.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rpc/delve_types.hpp"
#include "rpc/json_rpc_client.hpp"

namespace goscope::rpc {

class DelveClient {
 public:
  explicit DelveClient(std::unique_ptr<JsonRpcClient> rpc, Millis timeout = Millis(10'000));

  JsonRpcClient& transport() { return *rpc_; }
  Millis timeout() const { return timeout_; }

  // State{NonBlocking}: with nonBlocking it answers at once while the target
  // runs (Running=true and little else).
  // `timeout` defaults to the client's (the first State after attach waits
  // for the attach itself).
  Result<DebuggerState> state(bool nonBlocking, bool interruptible = true, std::optional<Millis> timeout = {});
  // Command, waiting for its reply; for a continue that is when the target
  // stops again, so long-running commands use startCommand/finishCommand.
  Result<DebuggerState> command(const DebuggerCommand& cmd, Millis timeout, bool interruptible = true);
  Result<uint64_t> startCommand(const DebuggerCommand& cmd);
  Result<DebuggerState> finishCommand(uint64_t id, Millis timeout, bool interruptible = true);

  Result<std::vector<Location>> findLocation(const FindLocationIn& in);
  Result<Breakpoint> createBreakpoint(const CreateBreakpointIn& in);
  Result<Breakpoint> clearBreakpoint(int64_t id, bool interruptible = true);
  Result<std::vector<Breakpoint>> listBreakpoints(bool all = false, bool interruptible = true);
  Result<Variable> eval(const EvalIn& in);
  Result<void> set(const SetIn& in);
  Result<ListGoroutinesOut> listGoroutines(const ListGoroutinesIn& in);
  Result<std::vector<Stackframe>> stacktrace(const StacktraceIn& in);
  Result<std::vector<std::string>> listFunctions(const std::string& filter);
  Result<std::vector<Variable>> listPackageVars(const std::string& filter, const LoadConfig& cfg = kDefaultLoadConfig);
  Result<GetVersionOut> getVersion();
  // Always Kill=false: Delve's Kill=true SIGINTs an attached process.
  Result<void> detach(Millis timeout);

 private:
  template <class Out, class In>
  Result<Out> call(const char* method, const In& in, Millis timeout, bool interruptible = true);

  std::unique_ptr<JsonRpcClient> rpc_;
  Millis timeout_;
};

}  // namespace goscope::rpc
