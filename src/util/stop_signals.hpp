// Ctrl-C, SIGTERM and SIGHUP end a session cleanly: the handler only sets a
// flag; the session loop sees it, detaches and prints totals. A second
// signal while detaching is ignored rather than killing goscope half-way.
#pragma once

namespace goscope {

void installStopSignals();
bool stopRequested();
int stopSignal();  // the signal that asked us to stop, 0 if none
void requestStop();

}  // namespace goscope
