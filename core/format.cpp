#include "core/format.hpp"

#include <array>
#include <limits>

namespace fp4jit {

namespace {
constexpr std::array<Named<ElemFormat>, 3> kElemNames{{
    {ElemFormat::e2m1, "e2m1"}, {ElemFormat::e4m3, "e4m3"}, {ElemFormat::e5m2, "e5m2"}}};
constexpr std::array<Named<ScaleFormat>, 4> kScaleNames{{{ScaleFormat::e8m0, "e8m0"},
                                                         {ScaleFormat::ue4m3, "ue4m3"},
                                                         {ScaleFormat::ue5m3, "ue5m3"},
                                                         {ScaleFormat::fp32, "fp32"}}};
constexpr std::array<Named<Ue5m3Variant>, 3> kUe5m3Names{{{Ue5m3Variant::nan_ff, "114688"},
                                                          {Ue5m3Variant::all_finite, "122880"},
                                                          {Ue5m3Variant::ieee, "61440"}}};
constexpr std::array<Named<DType>, 3> kDTypeNames{
    {{DType::f32, "float32"}, {DType::f16, "float16"}, {DType::bf16, "bfloat16"}}};
}  // namespace

std::span<const Named<ElemFormat>> elem_format_names() { return kElemNames; }
std::span<const Named<ScaleFormat>> scale_format_names() { return kScaleNames; }
std::span<const Named<Ue5m3Variant>> ue5m3_variant_names() { return kUe5m3Names; }
std::span<const Named<DType>> dtype_names() { return kDTypeNames; }

int bits(ElemFormat f) { return f == ElemFormat::e2m1 ? 4 : 8; }

float elem_max(ElemFormat f) {
  switch (f) {
    case ElemFormat::e2m1: return 6.0f;
    case ElemFormat::e4m3: return 448.0f;
    case ElemFormat::e5m2: return 57344.0f;
  }
  return 0.0f;
}

int elem_emax(ElemFormat f) {
  switch (f) {
    case ElemFormat::e2m1: return 2;
    case ElemFormat::e4m3: return 8;
    case ElemFormat::e5m2: return 15;
  }
  return 0;
}

int dtype_size(DType d) { return d == DType::f32 ? 4 : 2; }

nx::MiniFloat minifloat(ElemFormat f) {
  if (f == ElemFormat::e4m3) return nx::kE4M3;
  if (f == ElemFormat::e5m2) return nx::kE5M2;
  fail(ErrorKind::internal, "minifloat(): {} has no generic MiniFloat description", name(f));
}

nx::MiniFloat minifloat(ScaleFormat f, Ue5m3Variant variant) {
  if (f == ScaleFormat::ue4m3) return nx::kUE4M3;
  if (f == ScaleFormat::ue5m3) {
    switch (variant) {
      case Ue5m3Variant::nan_ff: return nx::kUE5M3Nan;
      case Ue5m3Variant::all_finite: return nx::kUE5M3Finite;
      case Ue5m3Variant::ieee: return nx::kUE5M3Ieee;
    }
  }
  fail(ErrorKind::internal, "minifloat(): scale format {} has no generic MiniFloat description",
       name(f));
}

float ue5m3_variant_max(Ue5m3Variant variant) {
  return nx::mf_max_value(minifloat(ScaleFormat::ue5m3, variant));
}

float scale_format_max(ScaleFormat f, Ue5m3Variant variant) {
  switch (f) {
    case ScaleFormat::e8m0: return nx::pow2f(127);
    case ScaleFormat::ue4m3: return 448.0f;
    case ScaleFormat::ue5m3: return ue5m3_variant_max(variant);
    case ScaleFormat::fp32: return std::numeric_limits<float>::max();
  }
  return 0.0f;
}

}  // namespace fp4jit
