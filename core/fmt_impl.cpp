// fmt's compiled part, built once for the whole project. Every other file includes only fmt's
// headers (no FMT_HEADER_ONLY): header-only fmt compiled its implementation into each of about
// two hundred files, some 13 s each on two busy cores. Kept inside fp4jit's own libraries and
// binaries (static), so nothing needs a libfmt.so at run time. For fmt 9 (core/CMakeLists.txt).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// The templates fmt's headers declare and format-inl.h defines: instantiated here for what the
// headers ask of them (float and double output, the locale hooks of char and wchar_t).
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
