// mathf.hpp: the project's own exp, log, sin and cos, defined in docs/numerics.md ("Transcendentals")
// as fixed sequences of IEEE f64 operations. The reference step calls these instead of the C library's
// so that its results do not depend on the platform's libm, and engine.wat performs the very same
// operations, so the two agree bit for bit.
#pragma once

namespace needle {

// e^x rounded to f32 once: 2^k x T[j] x p(r) in f64 (table of 2^(j/32), quartic p); within 0.51 ulp.
float expf32(float x);

// ln x rounded to f32 once: e ln2 + 2 atanh((m-1)/(m+1)) in f64 (odd series to s^13); within 0.51 ulp.
float logf32(float x);

// e^x in f64: reduction by ln 2 in two parts, Taylor series to r^15 (a few f64 ulps).
double exp64(double x);

// ln x in f64: x = 2^e m with m in (sqrt(1/2), sqrt(2)], atanh series to s^25 (a few f64 ulps).
double log64(double x);

// sin x in f64 for |x| < 2^30 (NaN beyond): reduction by pi/2 in three parts, Taylor kernels.
double sin64(double x);

// cos x in f64, as sin64.
double cos64(double x);

}  // namespace needle
