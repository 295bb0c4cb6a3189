// Included last by every source in quants/: turns off the contraction of a * b + c into one
// fused multiply-add for the rest of that file. ggml's reference quantizers round every
// product and sum on its own; GCC contracts by default in C++, and with -march=native the CPU
// has FMA, which rounds once instead of twice and flips the choice of scale in about one
// block in a hundred. With contraction off our quantizers reproduce llama.cpp's files byte for
// byte. (Dequantization does not depend on it: its products are exact in float.)
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
