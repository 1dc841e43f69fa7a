// One-line notices the library gives while it works, for the person who
// started it ("measuring what a probe costs on this host"). The layers below
// the CLI never print: they notify; the CLI shows each on stderr as
// "goscope: LINE"; a program using the library sets its own hook, or finds
// them in the debug log.
#pragma once

#include <functional>
#include <string>

namespace goscope {

using NoticeHook = std::function<void(const std::string& line)>;
void setNoticeHook(NoticeHook hook);
void notify(const std::string& line);

}  // namespace goscope
