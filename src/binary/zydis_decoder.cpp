#include "binary/zydis_decoder.hpp"

namespace goscope {

const ZydisDecoder& zydisDecoder() {
  static const ZydisDecoder d = [] {
    ZydisDecoder x;
    ZydisDecoderInit(&x, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisDecoderEnableMode(&x, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
    return x;
  }();
  return d;
}

const ZydisDecoder& zydisOperandDecoder() {
  static const ZydisDecoder d = [] {
    ZydisDecoder x;
    ZydisDecoderInit(&x, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    return x;
  }();
  return d;
}

}  // namespace goscope
