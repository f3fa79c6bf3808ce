#include <gtest/gtest.h>
#include "core/recipe.hpp"
TEST(Smoke, ParsesPreset) { EXPECT_EQ(fp4jit::parse_recipe("mxfp4").preset, "mxfp4"); }
