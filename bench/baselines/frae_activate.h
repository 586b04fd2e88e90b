/* The activations of the C floors (simd_floor.c, matrix_floor.c), as the layer table codes
 * them (bench/baselines/layout.py, ACTIVATION_CODES), each with its slope for the backward
 * pass; compiled with -ffast-math, glibc's vector expf and tanhf evaluate them a vector of
 * lanes a call. */
#ifndef FRAE_ACTIVATE_H
#define FRAE_ACTIVATE_H

#include <math.h>

enum { SWISH = 0, TANH = 1, SIGMOID = 2, LINEAR = 3 };

/* act(a) and, through `slope`, act'(a): swish a·σ(a), tanh, sigmoid σ(a), linear. */
static inline float activate(float pre, int kind, float *slope) {
    switch (kind) {
    case SWISH: {
        const float s = 1.0f / (1.0f + expf(-pre));
        *slope = s * (1.0f + pre * (1.0f - s));
        return pre * s;
    }
    case TANH: {
        const float out = tanhf(pre);
        *slope = 1.0f - out * out;
        return out;
    }
    case SIGMOID: {
        const float s = 1.0f / (1.0f + expf(-pre));
        *slope = s * (1.0f - s);
        return s;
    }
    default: *slope = 1.0f; return pre;
    }
}

#endif
