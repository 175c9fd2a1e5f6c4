/* <math.h> for kernels on the device: the runtime's libm (the libm crate). */
#ifndef NEURONCUSTOMOP_MATH_H
#define NEURONCUSTOMOP_MATH_H
#ifdef __cplusplus
extern "C" {
#endif
float expf(float x);
float logf(float x);
float log2f(float x);
float log10f(float x);
float sqrtf(float x);
float tanhf(float x);
float powf(float x, float y);
float fabsf(float x);
float floorf(float x);
float ceilf(float x);
float fmaxf(float x, float y);
float fminf(float x, float y);
float erff(float x);
float sinf(float x);
float cosf(float x);
float tanf(float x);
double exp(double x);
double log(double x);
double log2(double x);
double log10(double x);
double sqrt(double x);
double tanh(double x);
double pow(double x, double y);
double fabs(double x);
double floor(double x);
double ceil(double x);
double fmax(double x, double y);
double fmin(double x, double y);
double erf(double x);
double sin(double x);
double cos(double x);
double tan(double x);
#ifdef __cplusplus
}
#endif
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#endif
