/* The FRAE forward and back-propagation through time in C, vectorised over the batch.
 *
 * The loops of bench/baselines/numba_floor.py, on the same arrays (bench/baselines/layout.py):
 * one time step is a (ROWS, B) workspace of float, batch innermost; a layer reads one block
 * of rows and writes the next; the weights are one flat vector in canonical order, kernels
 * (in, out) row-major; each weight's gradient accumulates per batch lane in `lanes`
 * (weights, B), summed over the lanes by the caller. (Summing over the lanes at every step
 * instead, a vector reduction per weight, was some 10% faster at B = 256 but 8 times slower
 * at B = 1, where the reduction's set-up is all there is.)
 *
 * Every loop over the batch is `#pragma omp simd`: compiled with -ffast-math -fopenmp-simd,
 * glibc declares expf and tanhf with vector variants (libmvec), so one call activates 8 or
 * 16 lanes. bench/baselines/simd_floor.py writes frae_plan.h for one config (the layer table
 * of c_forward.c plus the decoder's first layer and the table reversed), so every size is a
 * compile-time constant.
 */
#include <math.h>
#include <string.h>

#include "frae_activate.h"
#include "frae_plan.h"

/* h[out_row + j] = act(b_j + Σ_i W[i, j] h[in_row + i]) for every lane; its slope into s. */
static inline void dense_forward(float *h, float *s, const float *theta, int in_row, int fan_in,
                                 int out_row, int units, int kernel, int bias, int kind,
                                 long batch) {
    for (int j = 0; j < units; ++j) {
        float *out = h + (long)(out_row + j) * batch, *slope = s + (long)(out_row + j) * batch;
#pragma omp simd
        for (long b = 0; b < batch; ++b) {
            float pre = theta[bias + j];
            for (int i = 0; i < fan_in; ++i)
                pre += theta[kernel + i * units + j] * h[(long)(in_row + i) * batch + b];
            out[b] = activate(pre, kind, &slope[b]);
        }
    }
}

/* One layer's backward at one step: delta[out] becomes d loss/d pre-activation, adds into
 * the per-lane gradients of W and b, and flows back through W into delta[in]. */
static inline void dense_backward(const float *h, const float *s, float *delta, float *lanes,
                                  const float *theta, int in_row, int fan_in, int out_row,
                                  int units, int kernel, int bias, long batch) {
    for (int j = 0; j < units; ++j) {
        float *d_out = delta + (long)(out_row + j) * batch;
        const float *slope = s + (long)(out_row + j) * batch;
        float *d_bias = lanes + (long)(bias + j) * batch;
#pragma omp simd
        for (long b = 0; b < batch; ++b) {
            const float d = d_out[b] * slope[b];
            d_out[b] = d;
            d_bias[b] += d;
            for (int i = 0; i < fan_in; ++i) {
                const int p = kernel + i * units + j;
                lanes[(long)p * batch + b] += h[(long)(in_row + i) * batch + b] * d;
                delta[(long)(in_row + i) * batch + b] += theta[p] * d;
            }
        }
    }
}

#define FORWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_forward(h, s, theta, in_row, fan_in, out_row, units, kernel, bias, kind, batch);
#define BACKWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_backward(h, s, delta, lanes, theta, in_row, fan_in, out_row, units, kernel, bias, batch);

/* The recurrence from x̂_0 = 0 over batch-major inputs (B, T, width): x, or with codes_given
 * the codes z for the decoder alone. With `record` step t keeps its workspace and slopes in
 * work[t], slopes[t] (each (T, ROWS, B)) for frae_backward; without, one (ROWS, B) workspace
 * is reused. Writes batch-major outputs (B, T, F) and codes (B, T, L) where not NULL: the
 * caller's arrays are read and written in place, never transposed. */
static inline void forward(const float *inputs, int codes_given, const float *theta, float *work,
                           float *slopes, float *outputs, float *codes, long steps, long width,
                           long batch, int record) {
    const long plane = (long)ROWS * batch, block = FEATURES * batch;
    const long input_row = codes_given ? CODE_ROW : 0;
    for (long t = 0; t < steps; ++t) {
        float *h = work + (record ? t * plane : 0), *s = slopes + (record ? t * plane : 0);
        if (t == 0) {
            memset(h + (long)FEEDBACK_A * batch, 0, sizeof(float) * block);
            memset(h + (long)FEEDBACK_D * batch, 0, sizeof(float) * block);
        } else {
            const float *previous = (record ? h - plane : h) + (long)OUTPUT_ROW * batch;
            memcpy(h + (long)FEEDBACK_A * batch, previous, sizeof(float) * block);
            memcpy(h + (long)FEEDBACK_D * batch, previous, sizeof(float) * block);
        }
        for (long w = 0; w < width; ++w) {
            float *row = h + (input_row + w) * batch;
            const float *column = inputs + t * width + w;
#pragma omp simd
            for (long b = 0; b < batch; ++b)
                row[b] = column[b * steps * width];
        }
        if (!codes_given) {
            FRAE_ENCODER_LAYERS(FORWARD)
        }
        FRAE_DECODER_LAYERS(FORWARD)
        for (long f = 0; outputs && f < FEATURES; ++f) {
            const float *row = h + (OUTPUT_ROW + f) * batch;
            float *column = outputs + t * FEATURES + f;
#pragma omp simd
            for (long b = 0; b < batch; ++b)
                column[b * steps * FEATURES] = row[b];
        }
        for (long c = 0; codes && c < LATENT; ++c) {
            const float *row = h + (CODE_ROW + c) * batch;
            float *column = codes + t * LATENT + c;
#pragma omp simd
            for (long b = 0; b < batch; ++b)
                column[b * steps * LATENT] = row[b];
        }
    }
}

void frae_forward(const float *inputs, int codes_given, const float *theta, float *work,
                  float *slopes, float *outputs, float *codes, long steps, long width, long batch) {
    forward(inputs, codes_given, theta, work, slopes, outputs, codes, steps, width, batch, 0);
}

/* The forward of x (B, T, F) for frae_backward, which reads x̂_t from work[t]. */
void frae_forward_recorded(const float *inputs, const float *theta, float *work, float *slopes,
                           long steps, long batch) {
    forward(inputs, 0, theta, work, slopes, NULL, NULL, steps, FEATURES, batch, 1);
}

/* Gradient of mean((x̂ - y)²) after frae_forward_recorded, for batch-major targets y
 * (B, T, F); scale is 2/(B·T·F).
 *
 * The gradient reaching x̂_t is the loss's own, scale·(x̂_t - y_t), plus `carry`: what flows
 * back from step t+1 through both feedback blocks. delta (ROWS, B) holds each row's gradient
 * at one step; lanes (weights, B) and loss (B, double) accumulate per batch lane. */
void frae_backward(const float *work, const float *slopes, const float *targets, float scale, const float *theta, float *delta,
                   float *carry, float *lanes, double *loss, long steps, long batch) {
    const long plane = (long)ROWS * batch, block = FEATURES * batch;
    memset(lanes, 0, sizeof(float) * WEIGHTS * batch);
    memset(carry, 0, sizeof(float) * block);
    memset(loss, 0, sizeof(double) * batch);
    for (long t = steps - 1; t >= 0; --t) {
        const float *h = work + t * plane, *s = slopes + t * plane;
        memset(delta, 0, sizeof(float) * plane);
        for (int f = 0; f < FEATURES; ++f) {
            const float *out = h + (long)(OUTPUT_ROW + f) * batch;
            const float *y = targets + t * FEATURES + f;
            float *d = delta + (long)(OUTPUT_ROW + f) * batch;
#pragma omp simd
            for (long b = 0; b < batch; ++b) {
                const float error = out[b] - y[b * steps * FEATURES];
                loss[b] += error * error;
                d[b] = scale * error + carry[f * batch + b];
            }
        }
        FRAE_LAYERS_REVERSED(BACKWARD)
#pragma omp simd
        for (long k = 0; k < block; ++k)
            carry[k] = delta[(long)FEEDBACK_A * batch + k] + delta[(long)FEEDBACK_D * batch + k];
    }
}
