// The rank's tie to whoever started it: a signal from the kernel when that
// process ends (prctl PR_SET_PDEATHSIG). A rank launched by railcomm run (or
// through ssh or `ip netns exec`) whose launcher is killed must not live on,
// even if it never returns to its event loop to see the launcher's connection close.
#include "common.h"
#include <cerrno>
#include <sys/prctl.h>
#include <unistd.h>

namespace railcomm {

/** parentDeathSignal(signal): ask for `signal` when the parent process ends; returns the parent's pid. */
static void ParentDeathSignal(const FunctionCallbackInfo<Value>& args) {
  Isolate* iso = args.GetIsolate();
  if (args.Length() < 1 || !args[0]->IsInt32()) { ThrowType(iso, "parentDeathSignal(signal)"); return; }
  const int sig = args[0].As<v8::Int32>()->Value();
  if (prctl(PR_SET_PDEATHSIG, sig) != 0) { ThrowErrno(iso, "prctl(PR_SET_PDEATHSIG)", errno); return; }
  args.GetReturnValue().Set(static_cast<int32_t>(getppid()));
}

void InitProcess(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "parentDeathSignal", ParentDeathSignal);
}

}  // namespace railcomm
