// Recipe text: any text is parsed or refused with Error(recipe); a parsed recipe's canonical form
// parses back to the same recipe, is a fixed point, and gives every operand a layout or a clear
// Error(invalid_argument) for a small tensor.
#include "core/quantized.hpp"
#include "core/recipe.hpp"
#include "tests/fuzz/fuzz.hpp"

using fp4jit::ErrorKind;

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
  std::vector<std::vector<std::uint8_t>> seeds;
  for (const fp4jit::Preset& p : fp4jit::presets()) {
    seeds.push_back(fp4jit::fuzz::to_bytes(p.name));
    seeds.push_back(fp4jit::fuzz::to_bytes(fp4jit::canonical(p.make())));
  }
  for (const char* text :
       {"mxfp4:round=even", "msfp4:occ=0.97,dge.k=3", "nvfp4:grad.round=even",
        "tetrajet:wt.block=1x16", "ue5m3:ue5m3=finite,wgrad.had=32",
        "nvfp4:x.sr.bits=16,x.round=sr", "mxfp4:w.had=128,w.had.seed=7,x.qema=on",
        "msfp4:dge.clip=2.5,qema.decay=0.9,qema.start=3"})
    seeds.push_back(fp4jit::fuzz::to_bytes(text));
  return seeds;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fp4jit::Recipe r;
  if (!fp4jit::fuzz::accepts([&] { r = fp4jit::parse_recipe(text); }, {ErrorKind::recipe},
                             "parse_recipe"))
    return 0;
  const std::string c = fp4jit::canonical(r);
  fp4jit::Recipe back;
  if (!fp4jit::fuzz::accepts([&] { back = fp4jit::parse_recipe(c); }, {},
                             "parsing a canonical recipe"))
    return 0;
  FUZZ_CHECK(back == r, "the canonical form does not parse back to the recipe: " + c);
  FUZZ_CHECK(fp4jit::canonical(back) == c, "the canonical form is not a fixed point: " + c);
  FUZZ_CHECK(fp4jit::recipe_hash(back) == fp4jit::recipe_hash(r), "the recipe hash moved: " + c);
  // (no structured bindings in the lambda: clang 14 cannot capture them)
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{64, 256}, {3, 17}};
  for (int role = 0; role < fp4jit::kNumRoles; ++role)
    for (const auto& shape : shapes)
      fp4jit::fuzz::accepts(
          [&] {
            fp4jit::quant_layout(r, static_cast<fp4jit::Role>(role), shape.first, shape.second);
          },
          {ErrorKind::invalid_argument, ErrorKind::unsupported}, "quant_layout");
  return 0;
}
