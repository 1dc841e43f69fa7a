// goscope top's terminal: ncurses on the process's own tty, the table drawn
// from a top::Model, keys read with a timeout. Owned: close() (or the
// destructor) gives the terminal back as it was (endwin), which every way
// out of `top` must do before it prints anything.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "cli/top_model.hpp"
#include "util/result.hpp"

struct screen;  // ncurses' SCREEN

namespace goscope::cli::top {

struct View {
  std::string title;                 // the first line
  bool latency = false;              // the p50/p99 columns and their keys
  bool editing = false;              // the `/` prompt is open
  std::string input;                 // what the prompt holds
  std::vector<std::string> bottom;   // status lines, last at the very bottom
};

class Screen {
 public:
  // Fails when the terminal cannot be used (TERM unknown).
  static Result<Screen> open();
  Screen(Screen&&) noexcept;
  Screen& operator=(Screen&&) = delete;
  ~Screen();
  void close();

  void draw(const Model& model, const View& view);
  // A key (ncurses' code), or -1 when none came within timeoutMs.
  int key(int timeoutMs);

 private:
  Screen() = default;
  ::screen* screen_ = nullptr;
  std::FILE* out_ = nullptr;  // the terminal, for ncurses
  std::FILE* in_ = nullptr;
};

// The keys: Enter, Escape, Backspace, Ctrl-C as ncurses reports them.
bool isEnter(int key);
bool isEscape(int key);
bool isBackspace(int key);
inline constexpr int kCtrlC = 3;

}  // namespace goscope::cli::top
