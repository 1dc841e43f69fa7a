#include "target/pclntab_decode.hpp"

namespace goscope::pcln {

std::optional<uint32_t> readUvarint(std::span<const uint8_t> buf, size_t& pos) {
  uint32_t v = 0;
  for (unsigned shift = 0; shift < 35; shift += 7) {
    if (pos >= buf.size()) return std::nullopt;
    uint8_t b = buf[pos++];
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  return std::nullopt;  // a sixth continuation byte: not a uint32
}

bool PcValueDecoder::next(PcValueRun& run) {
  if (malformed_) return false;
  size_t pos = pos_;
  auto uvdelta = readUvarint(table_, pos);
  if (!uvdelta) {
    malformed_ = true;
    return false;
  }
  if (*uvdelta == 0 && !first_) return false;  // terminator
  auto pcdelta = readUvarint(table_, pos);
  if (!pcdelta) {
    malformed_ = true;
    return false;
  }
  pos_ = pos;
  first_ = false;
  // Wrapping add, like the runtime's int32 arithmetic (no UB on hostile input).
  value_ = static_cast<int32_t>(static_cast<uint32_t>(value_) + static_cast<uint32_t>(unzigzag(*uvdelta)));
  run.start = pc_;
  pc_ += static_cast<uint64_t>(*pcdelta) * quantum_;
  run.end = pc_;
  run.value = value_;
  return true;
}

std::optional<int32_t> pcValueAt(std::span<const uint8_t> table, uint64_t entry, uint64_t target,
                                 uint32_t quantum) {
  if (target < entry) return std::nullopt;
  PcValueDecoder d(table, entry, quantum);
  for (PcValueRun r; d.next(r);)
    if (target < r.end) return r.value;
  return std::nullopt;
}

std::optional<int32_t> pcValueMax(std::span<const uint8_t> table, uint64_t entry, uint32_t quantum) {
  std::optional<int32_t> best;
  PcValueDecoder d(table, entry, quantum);
  for (PcValueRun r; d.next(r);)
    if (!best || r.value > *best) best = r.value;
  return best;
}

}  // namespace goscope::pcln
