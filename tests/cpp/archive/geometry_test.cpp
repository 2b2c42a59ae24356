// Geometry presets and the header consistency rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "bytes.hpp"
#include "geometry.hpp"

using namespace needle;

namespace {

std::string validationError(const Geometry& g) {
  try {
    validateGeometry(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("presets: base is the real Needle 2 geometry", "[geometry]") {
  Geometry g = presetGeometry("base");
  CHECK(g.vocab == 8192);
  CHECK(g.d_model == 512);
  CHECK(g.num_heads == 8);
  CHECK(g.num_kv_heads == 4);
  CHECK(g.num_layers == 27);
  CHECK(g.head_dim == 64);
  CHECK(g.max_seq_len == 2048);
  CHECK(g.hada_n == 512);
  CHECK(g.mhc_lanes == 4);
  CHECK(g.engram_slots == 8192);
  CHECK(g.engram_sub_dim == 128);
  CHECK(g.num_engram_tables == 4);
  CHECK(g.engram_conv_taps == 4);
  CHECK(g.engram_conv_dilation == 3);
  CHECK(g.num_engram_orders == 2);
  CHECK(g.engram_orders[0] == 2);
  CHECK(g.engram_orders[1] == 3);
  CHECK(g.engram_orders[2] == 0);
  CHECK(g.engram_orders[3] == 0);
  CHECK(g.num_engram_sites == 2);
  CHECK(g.engram_sites[0] == 2);
  CHECK(g.engram_sites[1] == 15);
  CHECK(g.kv_window == 256);
  CHECK(g.kv_bits == 8);
  CHECK(g.codebook_len == 28);
  CHECK(g.rope_theta == 100000.0f);
  CHECK(g.num_tensors == 0);
  CHECK(g.engramHeads() == 2);
  CHECK(g.engramRingRows() == 10);
  CHECK(g.siteOfLayer(15) == 1);
  CHECK(g.siteOfLayer(3) == -1);
  validateGeometry(g);
}

TEST_CASE("presets: tiny, small and micro", "[geometry]") {
  Geometry t = presetGeometry("tiny");
  CHECK(t.vocab == 512);
  CHECK(t.d_model == 128);
  CHECK(t.num_heads == 2);
  CHECK(t.num_kv_heads == 1);
  CHECK(t.head_dim == 64);
  CHECK(t.num_layers == 4);
  CHECK(t.max_seq_len == 256);
  CHECK(t.hada_n == 128);
  CHECK(t.mhc_lanes == 4);
  CHECK(t.engram_slots == 256);
  CHECK(t.num_engram_tables == 2);
  CHECK(t.engram_sub_dim == 64);
  CHECK(t.engram_conv_taps == 4);
  CHECK(t.engram_conv_dilation == 3);
  CHECK(t.engram_sites[0] == 1);
  CHECK(t.engram_sites[1] == 3);
  CHECK(t.kv_window == 32);
  CHECK(t.rope_theta == 10000.0f);
  validateGeometry(t);

  Geometry s = presetGeometry("small");
  CHECK(s.vocab == 2048);
  CHECK(s.d_model == 256);
  CHECK(s.num_heads == 4);
  CHECK(s.num_kv_heads == 2);
  CHECK(s.num_layers == 6);
  CHECK(s.max_seq_len == 512);
  CHECK(s.hada_n == 256);
  CHECK(s.engram_slots == 1024);
  CHECK(s.engram_sub_dim == 128);
  CHECK(s.engram_sites[0] == 2);
  CHECK(s.engram_sites[1] == 4);
  CHECK(s.kv_window == 64);
  validateGeometry(s);

  Geometry m = presetGeometry("micro");
  CHECK(m.d_model == 64);
  CHECK(m.num_heads == 2);
  CHECK(m.head_dim == 32);
  CHECK(m.num_layers == 2);
  CHECK(m.max_seq_len == 2048);
  CHECK(m.kv_window == 64);
  CHECK(m.engram_sites[0] == 0);
  CHECK(m.engram_sites[1] == 1);
  validateGeometry(m);

  CHECK_THROWS_WITH(presetGeometry("huge"), Catch::Contains("unknown geometry preset 'huge'"));
}

TEST_CASE("validateGeometry names the field and its header offset", "[geometry]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* what;
    std::function<void(Geometry&)> change;
    const char* expected;
  };
  const Case cases[] = {
      {"head_dim x heads", [](Geometry& g) { g.head_dim = 48; },
       "header field head_dim (offset 40): 48 x 8 heads != d_model 512"},
      {"head_dim odd", [](Geometry& g) { g.d_model = 504; g.hada_n = 512; g.head_dim = 63; },
       "header field head_dim (offset 40): 63 must be even"},
      {"head_dim 1", [](Geometry& g) { g.num_heads = 512; g.num_kv_heads = 512; g.head_dim = 1; },
       "header field head_dim (offset 40): 1 must be even and at least 2"},
      {"head_dim not a multiple of 32", [](Geometry& g) { g.d_model = 384; g.head_dim = 48; },
       "header field head_dim (offset 40): 48 is not a multiple of 32"},
      {"kv heads divide", [](Geometry& g) { g.num_kv_heads = 3; },
       "header field num_kv_heads (offset 32): 3 does not divide num_heads 8"},
      {"kv heads zero", [](Geometry& g) { g.num_kv_heads = 0; }, "header field num_kv_heads (offset 32)"},
      {"kv heads > heads", [](Geometry& g) { g.num_kv_heads = 16; }, "header field num_kv_heads (offset 32)"},
      {"heads zero", [](Geometry& g) { g.num_heads = 0; }, "header field num_heads (offset 28)"},
      {"hada not power of two", [](Geometry& g) { g.hada_n = 768; }, "header field hada_n (offset 48): 768"},
      {"hada below d", [](Geometry& g) { g.hada_n = 256; }, "header field hada_n (offset 48): 256"},
      {"hada zero", [](Geometry& g) { g.hada_n = 0; }, "header field hada_n (offset 48)"},
      {"codebook_len", [](Geometry& g) { g.codebook_len = 27; }, "header field codebook_len (offset 8): 27"},
      {"kv_bits", [](Geometry& g) { g.kv_bits = 4; }, "header field kv_bits (offset 16): 4"},
      {"vocab zero", [](Geometry& g) { g.vocab = 0; }, "header field vocab (offset 20): 0 is outside"},
      {"vocab cap", [](Geometry& g) { g.vocab = (1u << 20) + 1; }, "header field vocab (offset 20)"},
      {"d_model zero", [](Geometry& g) { g.d_model = 0; }, "header field d_model (offset 24)"},
      {"d_model cap", [](Geometry& g) { g.d_model = 1u << 17; g.hada_n = 1u << 17; g.head_dim = 1u << 14; },
       "header field d_model (offset 24)"},
      {"layers zero", [](Geometry& g) { g.num_layers = 0; }, "header field num_layers (offset 36)"},
      {"layers cap", [](Geometry& g) { g.num_layers = 1025; }, "header field num_layers (offset 36)"},
      {"lanes zero", [](Geometry& g) { g.mhc_lanes = 0; }, "header field mhc_lanes (offset 52)"},
      {"lanes 17", [](Geometry& g) { g.mhc_lanes = 17; }, "header field mhc_lanes (offset 52)"},
      {"orders zero", [](Geometry& g) { g.num_engram_orders = 0; }, "header field num_engram_orders (offset 76)"},
      {"orders five", [](Geometry& g) { g.num_engram_orders = 5; }, "header field num_engram_orders (offset 76)"},
      {"used order zero", [](Geometry& g) { g.engram_orders[1] = 0; },
       "header field engram_orders[1] (offset 84)"},
      {"unused order set", [](Geometry& g) { g.engram_orders[2] = 4; },
       "header field engram_orders[2] (offset 88): 4 but entries past num_engram_orders must be 0"},
      {"sites five", [](Geometry& g) { g.num_engram_sites = 5; }, "header field num_engram_sites (offset 96)"},
      {"site past layers", [](Geometry& g) { g.engram_sites[1] = 27; },
       "header field engram_sites[1] (offset 104): layer 27 but the model has 27 layers"},
      {"sites not increasing", [](Geometry& g) { g.engram_sites[0] = 15; g.engram_sites[1] = 2; },
       "header field engram_sites[1] (offset 104)"},
      {"sites equal", [](Geometry& g) { g.engram_sites[1] = 2; }, "strictly increasing"},
      {"unused site set", [](Geometry& g) { g.engram_sites[3] = 1; },
       "header field engram_sites[3] (offset 112)"},
      {"tables not multiple", [](Geometry& g) { g.num_engram_tables = 3; },
       "header field num_engram_tables (offset 64): 3 must be a positive multiple of num_engram_orders 2"},
      {"tables zero", [](Geometry& g) { g.num_engram_tables = 0; }, "header field num_engram_tables (offset 64)"},
      {"sub_dim zero", [](Geometry& g) { g.engram_sub_dim = 0; }, "header field engram_sub_dim (offset 60)"},
      {"slots zero", [](Geometry& g) { g.engram_slots = 0; }, "header field engram_slots (offset 56)"},
      {"slots cap", [](Geometry& g) { g.engram_slots = (1u << 24) + 1; }, "header field engram_slots (offset 56)"},
      {"taps zero", [](Geometry& g) { g.engram_conv_taps = 0; }, "header field engram_conv_taps (offset 68)"},
      {"dilation zero", [](Geometry& g) { g.engram_conv_dilation = 0; },
       "header field engram_conv_dilation (offset 72)"},
      {"window past max_seq", [](Geometry& g) { g.kv_window = 4096; },
       "header field kv_window (offset 12): 4096 exceeds max_seq_len 2048"},
      {"max_seq zero", [](Geometry& g) { g.max_seq_len = 0; }, "header field max_seq_len (offset 44)"},
      {"max_seq cap", [](Geometry& g) { g.max_seq_len = (1u << 20) + 1; g.kv_window = 0; },
       "header field max_seq_len (offset 44)"},
      {"theta NaN", [nan](Geometry& g) { g.rope_theta = nan; }, "header field rope_theta (offset 116)"},
      {"theta inf", [inf](Geometry& g) { g.rope_theta = inf; }, "header field rope_theta (offset 116)"},
      {"theta zero", [](Geometry& g) { g.rope_theta = 0; }, "header field rope_theta (offset 116)"},
      {"theta negative", [](Geometry& g) { g.rope_theta = -1; }, "header field rope_theta (offset 116)"},
  };
  for (const Case& c : cases) {
    Geometry g = presetGeometry("base");
    c.change(g);
    INFO(c.what);
    CHECK_THAT(validationError(g), Catch::Contains(c.expected));
  }
}

TEST_CASE("validateGeometry accepts what the rules allow", "[geometry]") {
  Geometry g = presetGeometry("tiny");
  g.num_engram_sites = 0;  // no engram: tables may be anything small, sites must be zero
  g.engram_sites[0] = g.engram_sites[1] = 0;
  g.num_engram_tables = 0;
  CHECK(validationError(g).empty());

  g = presetGeometry("base");
  g.hada_n = 1024;  // any power of two >= d
  g.kv_window = 0;  // plain causal
  g.mhc_lanes = 1;
  g.num_engram_orders = 4;
  g.engram_orders[2] = 4;
  g.engram_orders[3] = 5;
  g.num_engram_tables = 8;
  g.engram_sub_dim = 64;
  CHECK(validationError(g).empty());

  // Worst sizes under the caps stay representable: no overflow reaches checkedMul's limit.
  g = presetGeometry("base");
  g.vocab = 1u << 20;
  g.d_model = 65536;
  g.head_dim = 8192;
  g.hada_n = 65536;
  g.engram_slots = 1u << 24;
  g.num_engram_tables = 2;
  g.engram_sub_dim = 65536;
  CHECK(validationError(g).empty());
  g.num_engram_tables = 256;  // tables x slots would not fit a u32 shape entry
  CHECK_THAT(validationError(g), Catch::Contains("header field num_engram_tables (offset 64)"));
}
