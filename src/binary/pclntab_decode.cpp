#include "binary/pclntab_decode.hpp"

#include <algorithm>

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

std::vector<std::optional<int32_t>> pcValuesAt(std::span<const uint8_t> table, uint64_t entry,
                                               std::span<const uint64_t> targets, uint32_t quantum) {
  std::vector<std::optional<int32_t>> out(targets.size());
  // Targets in ascending order; a run's end never decreases (pc deltas are
  // unsigned), so each target gets the first run that ends after it, as in
  // pcValueAt.
  std::vector<uint32_t> order;
  order.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); i++)
    if (targets[i] >= entry) order.push_back(static_cast<uint32_t>(i));
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return targets[a] < targets[b]; });
  size_t k = 0;
  PcValueDecoder d(table, entry, quantum);
  for (PcValueRun r; k < order.size() && d.next(r);)
    for (; k < order.size() && targets[order[k]] < r.end; k++) out[order[k]] = r.value;
  return out;
}

std::vector<std::optional<uint64_t>> runStartsAt(std::span<const uint8_t> table, uint64_t entry,
                                                 std::span<const uint64_t> targets, uint32_t quantum) {
  std::vector<std::optional<uint64_t>> out(targets.size());
  size_t k = 0;
  while (k < targets.size() && targets[k] < entry) k++;
  PcValueDecoder d(table, entry, quantum);
  for (PcValueRun r; k < targets.size() && d.next(r);)
    for (; k < targets.size() && targets[k] < r.end; k++) out[k] = r.start;
  return out;
}

std::optional<int32_t> pcValueMax(std::span<const uint8_t> table, uint64_t entry, uint32_t quantum) {
  std::optional<int32_t> best;
  PcValueDecoder d(table, entry, quantum);
  for (PcValueRun r; d.next(r);)
    if (!best || r.value > *best) best = r.value;
  return best;
}

}  // namespace goscope::pcln
