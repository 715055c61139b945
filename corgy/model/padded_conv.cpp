#include "corgy/model/padded_conv.h"

#include "corgy/layers/conv2d.h"
#include "corgy/layers/pad.h"

namespace corgy {

std::optional<PaddedConvExpansion> expand_padded_conv(const Layer& layer) {
  const auto* conv = dynamic_cast<const Conv2d*>(&layer);
  if (!conv || conv->padding_mode() == PadMode::constant || conv->desc().padding == 0) return std::nullopt;
  return PaddedConvExpansion{std::make_unique<Pad>(Pad::uniform(conv->desc().padding, conv->padding_mode())),
                             std::make_unique<Conv2d>(conv->without_padding())};
}

}  // namespace corgy
