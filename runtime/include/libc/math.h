/* <math.h> for kernels on the device: the runtime's libm (the libm crate, a port of
 * musl's), every function below checked on the device against glibc
 * (qemu/tests/libm.rs). Where C leaves a choice, the results follow glibc's. */
#ifndef NEURONCUSTOMOP_MATH_H
#define NEURONCUSTOMOP_MATH_H
#ifdef __cplusplus
extern "C" {
#endif
float expf(float x);
float exp2f(float x);
float expm1f(float x);
float logf(float x);
float log2f(float x);
float log10f(float x);
float log1pf(float x);
float sqrtf(float x);
float cbrtf(float x);
float hypotf(float x, float y);
float powf(float x, float y);
float sinf(float x);
float cosf(float x);
float tanf(float x);
float asinf(float x);
float acosf(float x);
float atanf(float x);
float atan2f(float y, float x);
float sinhf(float x);
float coshf(float x);
float tanhf(float x);
float asinhf(float x);
float acoshf(float x);
float atanhf(float x);
float erff(float x);
float erfcf(float x);
float tgammaf(float x);
float lgammaf(float x);
float fabsf(float x);
float floorf(float x);
float ceilf(float x);
float truncf(float x);
float roundf(float x);
float roundevenf(float x);
float rintf(float x);
float fmodf(float x, float y);
float remainderf(float x, float y);
float copysignf(float x, float y);
float fdimf(float x, float y);
float fmaf(float x, float y, float z);
float nextafterf(float x, float y);
float ldexpf(float x, int n);
float scalbnf(float x, int n);
int ilogbf(float x);
float fmaximumf(float x, float y);
float fminimumf(float x, float y);
float fmaximum_numf(float x, float y);
float fminimum_numf(float x, float y);
double exp(double x);
double exp2(double x);
double expm1(double x);
double log(double x);
double log2(double x);
double log10(double x);
double log1p(double x);
double sqrt(double x);
double cbrt(double x);
double hypot(double x, double y);
double pow(double x, double y);
double sin(double x);
double cos(double x);
double tan(double x);
double asin(double x);
double acos(double x);
double atan(double x);
double atan2(double y, double x);
double sinh(double x);
double cosh(double x);
double tanh(double x);
double asinh(double x);
double acosh(double x);
double atanh(double x);
double erf(double x);
double erfc(double x);
double tgamma(double x);
double lgamma(double x);
double fabs(double x);
double floor(double x);
double ceil(double x);
double trunc(double x);
double round(double x);
double roundeven(double x);
double rint(double x);
double fmod(double x, double y);
double remainder(double x, double y);
double copysign(double x, double y);
double fdim(double x, double y);
double fma(double x, double y, double z);
double nextafter(double x, double y);
double ldexp(double x, int n);
double scalbn(double x, int n);
int ilogb(double x);
double fmaximum(double x, double y);
double fminimum(double x, double y);
double fmaximum_num(double x, double y);
double fminimum_num(double x, double y);
float fmaxf(float x, float y);
float fminf(float x, float y);
double fmax(double x, double y);
double fmin(double x, double y);
float nearbyintf(float x);
double nearbyint(double x);
float frexpf(float x, int *exp);
double frexp(double x, int *exp);
float modff(float x, float *integral);
double modf(double x, double *integral);
float remquof(float x, float y, int *quo);
double remquo(double x, double y, int *quo);
float lgammaf_r(float x, int *sign);
double lgamma_r(double x, int *sign);
#ifdef __cplusplus
}
#endif
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VALF (__builtin_huge_valf())
#define HUGE_VAL (__builtin_huge_val())
#define FP_ILOGB0 (-2147483647 - 1)
#define FP_ILOGBNAN (-2147483647 - 1)
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#define fpclassify(x) __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x)
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf_sign(x)
#define isfinite(x) __builtin_isfinite(x)
#define isnormal(x) __builtin_isnormal(x)
#define signbit(x) __builtin_signbit(x)
#define M_E 2.71828182845904523536
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_SQRT2 1.41421356237309504880
#endif
