#include "cli/top_screen.hpp"

#include <ncurses.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace goscope::cli::top {

namespace {

void line(int y, const std::string& text, attr_t attr = A_NORMAL) {
  attron(attr);
  mvaddnstr(y, 0, text.c_str(), COLS);
  attroff(attr);
}

}  // namespace

bool isEnter(int key) { return key == '\n' || key == '\r' || key == KEY_ENTER; }
bool isEscape(int key) { return key == 27; }
bool isBackspace(int key) { return key == KEY_BACKSPACE || key == 127 || key == 8; }

Result<Screen> Screen::open() {
  Screen s;
  // The terminal's own fds, not stdio's stdout: goscope's stdout is a
  // stream of its own with no fd (output/stdout_writer.hpp).
  const int out = ::dup(STDOUT_FILENO), in = ::dup(STDIN_FILENO);
  s.out_ = out >= 0 ? ::fdopen(out, "w") : nullptr;
  s.in_ = in >= 0 ? ::fdopen(in, "r") : nullptr;
  if (!s.out_ && out >= 0) ::close(out);
  if (!s.in_ && in >= 0) ::close(in);
  if (!s.out_ || !s.in_) return fail(ErrorKind::Internal, "top: cannot open the terminal");
  s.screen_ = ::newterm(nullptr, s.out_, s.in_);  // initscr would exit the process on a bad TERM
  if (!s.screen_) return fail(ErrorKind::Usage, "top: this terminal cannot be used (TERM unknown to ncurses?)");
  ::set_term(s.screen_);
  ::raw();  // Ctrl-C arrives as a key: the children share the terminal's process group, and quit through us
  ::noecho();
  ::keypad(stdscr, TRUE);
  ::set_escdelay(25);
  ::curs_set(0);
  return s;
}

Screen::Screen(Screen&& o) noexcept : screen_(o.screen_), out_(o.out_), in_(o.in_) {
  o.screen_ = nullptr;
  o.out_ = o.in_ = nullptr;
}

Screen::~Screen() { close(); }

void Screen::close() {
  if (screen_) {
    ::endwin();
    ::delscreen(screen_);
    screen_ = nullptr;
  }
  if (out_) std::fclose(out_);
  if (in_) std::fclose(in_);
  out_ = in_ = nullptr;
}

void Screen::draw(const Model& model, const View& view) {
  ::erase();
  line(0, view.title, A_BOLD);
  std::string keys = "sort: c calls/s  t total  n name";
  if (view.latency) keys += "  5 p50  9 p99";
  keys += "   / filter   q quit";
  line(1, keys);
  line(2, headerText(model.sortedBy(), view.latency), A_REVERSE);
  const auto rows = model.visible();
  const int footer = static_cast<int>(view.bottom.size()) + 1;  // + the filter line
  const int room = LINES - 3 - footer;
  int y = 3;
  if (rows.empty())
    line(y, model.rowCount() ? "(no function matches the filter)" : "(waiting for the first interval)");
  for (size_t i = 0; i < rows.size() && y - 3 < room; i++, y++) line(y, rowText(rows[i], view.latency));
  const int filterY = LINES - footer;
  if (view.editing) {
    line(filterY, "/" + view.input + "_   (Enter applies, Esc cancels)");
  } else if (!model.filter().empty()) {
    line(filterY, "filter: " + model.filter() + "   (" + std::to_string(rows.size()) + " of " +
                      std::to_string(model.rowCount()) + " shown; / to change)");
  }
  for (size_t i = 0; i < view.bottom.size(); i++) line(filterY + 1 + static_cast<int>(i), view.bottom[i]);
  ::refresh();
}

int Screen::key(int timeoutMs) {
  ::timeout(timeoutMs);
  const int k = ::getch();
  return k == ERR ? -1 : k;
}

}  // namespace goscope::cli::top
