#include "reference/reference.hpp"
#include <cstdio>
int main() {
  auto r = fp4jit::parse_recipe("nvfp4");
  std::puts(fp4jit::canonical(r).c_str());
}
