#include "binary/arg_info.hpp"

#include "binary/go_binary.hpp"

namespace goscope {

namespace {

// internal/abi/type.go (the same values under other names in Go 1.17-1.20's
// runtime/traceback.go): the operators, and the compiler's limits.
constexpr uint8_t kEndSeq = 0xff, kStartAgg = 0xfe, kEndAgg = 0xfd, kDotdotdot = 0xfc, kOffsetTooLarge = 0xfb;
constexpr size_t kMaxDepth = 5;
constexpr size_t kMaxLen = (kMaxDepth * 3 + 2) * 10 + 1;  // TraceArgsMaxLen

Result<std::vector<ArgInfoItem>> malformed(const char* why) {
  return fail(ErrorKind::BadTarget, std::string("malformed argument layout (FUNCDATA_ArgInfo): ") + why);
}

void shapeOf(const std::vector<ArgInfoItem>& items, std::string& out) {
  for (size_t i = 0; i < items.size(); i++) {
    if (i) out += ", ";
    switch (items[i].kind) {
      case ArgInfoItem::Kind::Word: out += 'w'; break;
      case ArgInfoItem::Kind::More: out += "..."; break;
      case ArgInfoItem::Kind::Beyond: out += '_'; break;
      case ArgInfoItem::Kind::Group:
        out += '{';
        shapeOf(items[i].items, out);
        out += '}';
        break;
    }
  }
}

}  // namespace

Result<std::vector<ArgInfoItem>> parseArgInfo(std::span<const uint8_t> bytes) {
  // A stack of open groups; [0] is the argument list itself.
  std::vector<std::vector<ArgInfoItem>> open(1);
  for (size_t i = 0; i < bytes.size() && i < kMaxLen; i++) {
    const uint8_t b = bytes[i];
    switch (b) {
      case kEndSeq:
        if (open.size() != 1) return malformed("ends inside a group");
        return std::move(open[0]);
      case kStartAgg:
        if (open.size() > kMaxDepth) return malformed("nested deeper than the compiler writes");
        open.emplace_back();
        break;
      case kEndAgg: {
        if (open.size() == 1) return malformed("closes a group it never opened");
        ArgInfoItem g;
        g.kind = ArgInfoItem::Kind::Group;
        g.items = std::move(open.back());
        open.pop_back();
        open.back().push_back(std::move(g));
        break;
      }
      case kDotdotdot: open.back().push_back({ArgInfoItem::Kind::More}); break;
      case kOffsetTooLarge: open.back().push_back({ArgInfoItem::Kind::Beyond}); break;
      default:
        if (b >= 0xf0) return malformed("unknown operator");
        if (i + 1 >= bytes.size()) return malformed("a word without its size");
        if (bytes[i + 1] == 0 || bytes[i + 1] > 8) return malformed("a word of an impossible size");
        open.back().push_back({ArgInfoItem::Kind::Word, b, bytes[i + 1]});
        i++;
    }
  }
  return malformed("no end within the compiler's maximum length");
}

std::string argInfoShape(const std::vector<ArgInfoItem>& args) {
  std::string out = "(";
  shapeOf(args, out);
  return out + ")";
}

size_t argInfoWords(const std::vector<ArgInfoItem>& args) {
  size_t n = 0;
  for (const auto& a : args) n += a.kind == ArgInfoItem::Kind::Word ? 1 : a.kind == ArgInfoItem::Kind::Group ? argInfoWords(a.items) : 0;
  return n;
}

Result<std::optional<std::vector<ArgInfoItem>>> readArgInfo(const GoBinary& bin, const GoFunction& fn) {
  auto at = bin.pclntab().argInfoAddress(fn);
  if (!at) return std::optional<std::vector<ArgInfoItem>>{};
  // The record has no stored length: read at most the compiler's maximum,
  // or what the file holds, and let the parser find the end.
  std::optional<std::span<const uint8_t>> bytes;
  for (size_t len = kMaxLen; len > 0 && !bytes; len = len > 16 ? len / 2 : len - 1) bytes = bin.elf().readVaddr(*at, len);
  if (!bytes) return fail(ErrorKind::BadTarget, "the argument layout (FUNCDATA_ArgInfo) of " + fn.name + " is outside the file");
  auto items = parseArgInfo(*bytes);
  if (!items) return items.failure();
  return std::optional<std::vector<ArgInfoItem>>(std::move(*items));
}

bool takesNoArguments(const GoBinary& bin, const GoFunction& fn) {
  constexpr uint8_t kFuncFlagAsm = 1 << 2;  // internal/abi/symtab.go: FuncFlagAsm (Go 1.20+; 0 before)
  return fn.args == 0 && !(fn.flag & kFuncFlagAsm) && bin.pclntab().format() != PclnFormat::Go116;
}

}  // namespace goscope
