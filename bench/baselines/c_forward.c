/* The FRAE forward in plain C: the check that the Numba floor is a floor.
 *
 * Same workspace as bench/baselines/numba_floor.py: one time step is a (ROWS, B) array of float, batch
 * innermost; rows hold the encoder input [x_t, x̂_{t-1}], each encoder layer's output, the
 * decoder input [z_t, x̂_{t-1}], each decoder layer's output, x̂_t last. The weights are one
 * flat vector in canonical order, kernels (in, out) row-major.
 *
 * bench/baselines/c_forward.py writes frae_plan.h for one config and compiles this file with it, so
 * every layer size is a compile-time constant:
 *   FEATURES, ROWS, FEEDBACK_A, FEEDBACK_D, OUTPUT_ROW
 *   FRAE_LAYERS(X): X(in_row, fan_in, out_row, units, kernel, bias, activation) per layer.
 */
#include <math.h>
#include <string.h>

#include "frae_plan.h"

enum { SWISH = 0, TANH = 1, SIGMOID = 2, LINEAR = 3 };

static inline float activate(float pre, int kind) {
    switch (kind) {
    case SWISH: return pre * (1.0f / (1.0f + expf(-pre)));
    case TANH: return tanhf(pre);
    case SIGMOID: return 1.0f / (1.0f + expf(-pre));
    default: return pre;
    }
}

/* h[out_row + j] = act(b_j + sum_i W[i, j] h[in_row + i]), for every lane b. */
static inline void dense(float *h, const float *theta, int in_row, int fan_in, int out_row,
                         int units, int kernel, int bias, int kind, long batch) {
    for (int j = 0; j < units; ++j) {
        float *out = h + (long)(out_row + j) * batch;
        for (long b = 0; b < batch; ++b) out[b] = theta[bias + j];
        for (int i = 0; i < fan_in; ++i) {
            const float weight = theta[kernel + i * units + j];
            const float *in = h + (long)(in_row + i) * batch;
            for (long b = 0; b < batch; ++b) out[b] += weight * in[b];
        }
        for (long b = 0; b < batch; ++b) out[b] = activate(out[b], kind);
    }
}

#define FRAE_DENSE(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense(h, theta, in_row, fan_in, out_row, units, kernel, bias, kind, batch);

/* x (T, F, B) -> outputs (T, F, B), from x̂_0 = initial (B, F), and x̂_T into final (B, F);
 * h is a (ROWS, B) workspace. */
void frae_predict(const float *x, const float *initial, const float *theta, float *outputs,
                  float *final, float *h, long steps, long batch) {
    const long block = FEATURES * batch;
    for (int f = 0; f < FEATURES; ++f)
        for (long b = 0; b < batch; ++b)
            h[(long)(FEEDBACK_A + f) * batch + b] = initial[b * FEATURES + f];
    memcpy(h + (long)FEEDBACK_D * batch, h + (long)FEEDBACK_A * batch, sizeof(float) * block);
    for (long t = 0; t < steps; ++t) {
        memcpy(h, x + t * block, sizeof(float) * block);
        FRAE_LAYERS(FRAE_DENSE)
        const float *reconstruction = h + (long)OUTPUT_ROW * batch;
        memcpy(outputs + t * block, reconstruction, sizeof(float) * block);
        memcpy(h + (long)FEEDBACK_A * batch, reconstruction, sizeof(float) * block);
        memcpy(h + (long)FEEDBACK_D * batch, reconstruction, sizeof(float) * block);
    }
    for (int f = 0; f < FEATURES; ++f) /* the feedback rows hold x̂_T now */
        for (long b = 0; b < batch; ++b)
            final[b * FEATURES + f] = h[(long)(FEEDBACK_A + f) * batch + b];
}
