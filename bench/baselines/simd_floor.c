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
 *
 * With state feedback (FRAE_GRU defined: contract section 1b) the step runs the GRU between
 * the encoder and the decoder and feeds back s_t instead of x̂_t; the header then also gives
 * the GRU's rows and weights (bench/baselines/layout.py, GRUPlan) and each side's layers
 * reversed. Without FRAE_GRU the code compiled is the output-feedback model's alone.
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

#ifdef FRAE_GRU
/* The GRU at one step, for every lane: from z_t (CODE_ROW) and s_{t-1} (PREVIOUS_ROW),
 *   r = σ(z K_r + b_K,r + s U_r + b_U,r),  p = σ(z K_p + b_K,p + s U_p + b_U,p),
 *   c_n = s U_n + b_U,n,  n = tanh(z K_n + b_K,n + r c_n),  s_t = (1 - p) n + p s_{t-1}
 * into STATE_ROW; r, p, n and c_n kept in the four blocks from GATE_ROW for the backward
 * pass. K (LATENT, 3 STATE) and U (STATE, 3 STATE) row-major, gate g's column j at g·STATE + j. */
static inline void gru_forward(float *h, const float *theta, long batch) {
    for (int j = 0; j < STATE; ++j) {
        float *r = h + (long)(GATE_ROW + j) * batch, *p = r + (long)STATE * batch;
        float *n = p + (long)STATE * batch, *c = n + (long)STATE * batch;
        float *state = h + (long)(STATE_ROW + j) * batch;
        const float *previous = h + (long)(PREVIOUS_ROW + j) * batch;
#pragma omp simd
        for (long b = 0; b < batch; ++b) {
            float a_r = theta[GRU_BIAS + j] + theta[GRU_RECURRENT_BIAS + j];
            float a_p = theta[GRU_BIAS + STATE + j] + theta[GRU_RECURRENT_BIAS + STATE + j];
            float a_n = theta[GRU_BIAS + 2 * STATE + j];
            float c_n = theta[GRU_RECURRENT_BIAS + 2 * STATE + j];
            for (int i = 0; i < LATENT; ++i) {
                const float *k = theta + GRU_KERNEL + i * 3 * STATE + j;
                const float z = h[(long)(CODE_ROW + i) * batch + b];
                a_r += k[0] * z;
                a_p += k[STATE] * z;
                a_n += k[2 * STATE] * z;
            }
            for (int i = 0; i < STATE; ++i) {
                const float *u = theta + GRU_RECURRENT_KERNEL + i * 3 * STATE + j;
                const float fed = h[(long)(PREVIOUS_ROW + i) * batch + b];
                a_r += u[0] * fed;
                a_p += u[STATE] * fed;
                c_n += u[2 * STATE] * fed;
            }
            const float reset = 1.0f / (1.0f + expf(-a_r)), update = 1.0f / (1.0f + expf(-a_p));
            const float candidate = tanhf(a_n + reset * c_n);
            r[b] = reset;
            p[b] = update;
            n[b] = candidate;
            c[b] = c_n;
            state[b] = (1.0f - update) * candidate + update * previous[b];
        }
    }
}

/* The GRU's backward at one step, from d loss/d s_t in delta's STATE_ROW block:
 *   d n = d s (1 - p)(1 - n²),  d p = d s (s_{t-1} - n) p (1 - p),  d r = d n c_n r (1 - r),
 *   d a = [d r | d p | d n],  d c = [d r | d p | d n r]
 * into the per-lane gradients of K (z d a), b_K, U (s_{t-1} d c) and b_U; d a Kᵀ into z_t's
 * rows of delta and d s p + d c Uᵀ into s_{t-1}'s. delta's four gate blocks receive d r, d p,
 * d n and d n r. Each weight's lanes are a loop of their own: one loop over all of a column's
 * weights would touch 3 (L + H) rows of `lanes` whose addresses differ by multiples of
 * 4·STATE·B bytes (8 KB for H = 8 at B = 256), all in one set of the L1 cache: 8 times
 * slower at B = 256. */
static inline void gru_backward(const float *h, float *delta, float *lanes, const float *theta,
                                long batch) {
    for (int j = 0; j < STATE; ++j) {
        const float *r = h + (long)(GATE_ROW + j) * batch, *p = r + (long)STATE * batch;
        const float *n = p + (long)STATE * batch, *c = n + (long)STATE * batch;
        const float *previous = h + (long)(PREVIOUS_ROW + j) * batch;
        const float *d_state = delta + (long)(STATE_ROW + j) * batch;
        float *d_r = delta + (long)(GATE_ROW + j) * batch, *d_p = d_r + (long)STATE * batch;
        float *d_n = d_p + (long)STATE * batch, *d_c_n = d_n + (long)STATE * batch;
        float *d_previous = delta + (long)(PREVIOUS_ROW + j) * batch;
#pragma omp simd
        for (long b = 0; b < batch; ++b) {
            const float reset = r[b], update = p[b], candidate = n[b];
            d_n[b] = d_state[b] * (1.0f - update) * (1.0f - candidate * candidate);
            d_p[b] = d_state[b] * (previous[b] - candidate) * update * (1.0f - update);
            d_r[b] = d_n[b] * c[b] * reset * (1.0f - reset);
            d_c_n[b] = d_n[b] * reset;
            d_previous[b] += d_state[b] * update;
        }
        const float *d_a[3] = {d_r, d_p, d_n}, *d_c[3] = {d_r, d_p, d_c_n};
        for (int g = 0; g < 3; ++g) {
            float *bias = lanes + (long)(GRU_BIAS + g * STATE + j) * batch;
            float *recurrent_bias = lanes + (long)(GRU_RECURRENT_BIAS + g * STATE + j) * batch;
#pragma omp simd
            for (long b = 0; b < batch; ++b) {
                bias[b] += d_a[g][b];
                recurrent_bias[b] += d_c[g][b];
            }
        }
        for (int i = 0; i < LATENT; ++i) {
            const int k = GRU_KERNEL + i * 3 * STATE + j;
            const float *z = h + (long)(CODE_ROW + i) * batch;
            float *d_z = delta + (long)(CODE_ROW + i) * batch;
            float *d_k_r = lanes + (long)k * batch, *d_k_p = d_k_r + (long)STATE * batch;
            float *d_k_n = d_k_p + (long)STATE * batch;
#pragma omp simd
            for (long b = 0; b < batch; ++b) {
                d_k_r[b] += z[b] * d_r[b];
                d_k_p[b] += z[b] * d_p[b];
                d_k_n[b] += z[b] * d_n[b];
                d_z[b] += theta[k] * d_r[b] + theta[k + STATE] * d_p[b] +
                          theta[k + 2 * STATE] * d_n[b];
            }
        }
        for (int i = 0; i < STATE; ++i) {
            const int u = GRU_RECURRENT_KERNEL + i * 3 * STATE + j;
            const float *fed = h + (long)(PREVIOUS_ROW + i) * batch;
            float *d_fed = delta + (long)(PREVIOUS_ROW + i) * batch;
            float *d_u_r = lanes + (long)u * batch, *d_u_p = d_u_r + (long)STATE * batch;
            float *d_u_n = d_u_p + (long)STATE * batch;
#pragma omp simd
            for (long b = 0; b < batch; ++b) {
                d_u_r[b] += fed[b] * d_r[b];
                d_u_p[b] += fed[b] * d_p[b];
                d_u_n[b] += fed[b] * d_c_n[b];
                d_fed[b] += theta[u] * d_r[b] + theta[u + STATE] * d_p[b] +
                            theta[u + 2 * STATE] * d_c_n[b];
            }
        }
    }
}

/* gru_forward at B = 1, where there are no lanes to vectorise over: vectorised over the GRU's
 * 3 STATE columns instead, each row of K and U contiguous over them. (One column at a time,
 * the GRU took 0.28 µs a step at B = 1, and XLA's step of the whole model 0.26.) */
static inline void gru_forward_one(float *h, const float *theta) {
    float a[3 * STATE], c[3 * STATE]; /* z K + b_K and s U + b_U */
#pragma omp simd
    for (int col = 0; col < 3 * STATE; ++col) {
        a[col] = theta[GRU_BIAS + col];
        c[col] = theta[GRU_RECURRENT_BIAS + col];
    }
    for (int i = 0; i < LATENT; ++i) {
        const float z = h[CODE_ROW + i], *k = theta + GRU_KERNEL + i * 3 * STATE;
#pragma omp simd
        for (int col = 0; col < 3 * STATE; ++col)
            a[col] += k[col] * z;
    }
    for (int i = 0; i < STATE; ++i) {
        const float fed = h[PREVIOUS_ROW + i], *u = theta + GRU_RECURRENT_KERNEL + i * 3 * STATE;
#pragma omp simd
        for (int col = 0; col < 3 * STATE; ++col)
            c[col] += u[col] * fed;
    }
#pragma omp simd
    for (int j = 0; j < STATE; ++j) {
        const float reset = 1.0f / (1.0f + expf(-(a[j] + c[j])));
        const float update = 1.0f / (1.0f + expf(-(a[STATE + j] + c[STATE + j])));
        const float candidate = tanhf(a[2 * STATE + j] + reset * c[2 * STATE + j]);
        h[GATE_ROW + j] = reset;
        h[GATE_ROW + STATE + j] = update;
        h[GATE_ROW + 2 * STATE + j] = candidate;
        h[GATE_ROW + 3 * STATE + j] = c[2 * STATE + j];
        h[STATE_ROW + j] = (1.0f - update) * candidate + update * h[PREVIOUS_ROW + j];
    }
}

/* gru_backward at B = 1, vectorised over the GRU's columns as gru_forward_one is; the
 * gradients reaching z_t and s_{t-1} are sums over the columns. */
static inline void gru_backward_one(const float *h, float *delta, float *lanes,
                                    const float *theta) {
    float d_a[3 * STATE], d_c[3 * STATE];
#pragma omp simd
    for (int j = 0; j < STATE; ++j) {
        const float reset = h[GATE_ROW + j], update = h[GATE_ROW + STATE + j];
        const float candidate = h[GATE_ROW + 2 * STATE + j], d_s = delta[STATE_ROW + j];
        const float d_n = d_s * (1.0f - update) * (1.0f - candidate * candidate);
        const float d_p = d_s * (h[PREVIOUS_ROW + j] - candidate) * update * (1.0f - update);
        const float d_r = d_n * h[GATE_ROW + 3 * STATE + j] * reset * (1.0f - reset);
        d_a[j] = d_c[j] = d_r;
        d_a[STATE + j] = d_c[STATE + j] = d_p;
        d_a[2 * STATE + j] = d_n;
        d_c[2 * STATE + j] = d_n * reset;
        delta[PREVIOUS_ROW + j] += d_s * update;
    }
#pragma omp simd
    for (int col = 0; col < 3 * STATE; ++col) {
        lanes[GRU_BIAS + col] += d_a[col];
        lanes[GRU_RECURRENT_BIAS + col] += d_c[col];
    }
    for (int i = 0; i < LATENT; ++i) {
        const int k = GRU_KERNEL + i * 3 * STATE;
        const float z = h[CODE_ROW + i];
        float d_z = 0.0f;
#pragma omp simd reduction(+ : d_z)
        for (int col = 0; col < 3 * STATE; ++col) {
            lanes[k + col] += z * d_a[col];
            d_z += theta[k + col] * d_a[col];
        }
        delta[CODE_ROW + i] += d_z;
    }
    for (int i = 0; i < STATE; ++i) {
        const int u = GRU_RECURRENT_KERNEL + i * 3 * STATE;
        const float fed = h[PREVIOUS_ROW + i];
        float d_fed = 0.0f;
#pragma omp simd reduction(+ : d_fed)
        for (int col = 0; col < 3 * STATE; ++col) {
            lanes[u + col] += fed * d_c[col];
            d_fed += theta[u + col] * d_c[col];
        }
        delta[PREVIOUS_ROW + i] += d_fed;
    }
}
#endif

#ifdef FRAE_GRU
enum { FEEDBACK = STATE, FED_BACK_ROW = STATE_ROW }; /* s_t, fed back */
#else
enum { FEEDBACK = FEATURES, FED_BACK_ROW = OUTPUT_ROW }; /* x̂_t, fed back */
#endif

/* The state entering the first step, `initial` (B, FEEDBACK), zeros for NULL (training), into
 * the FEEDBACK_A block of h (ROWS, B); the state after the last step, h's FED_BACK_ROW block,
 * into `final` (B, FEEDBACK). */
static inline void feed_in(float *h, const float *initial, long batch) {
    for (long f = 0; f < FEEDBACK; ++f)
#pragma omp simd
        for (long b = 0; b < batch; ++b)
            h[(FEEDBACK_A + f) * batch + b] = initial ? initial[b * FEEDBACK + f] : 0.0f;
}

static inline void feed_out(const float *h, float *final, long batch) {
    for (long f = 0; f < FEEDBACK; ++f)
#pragma omp simd
        for (long b = 0; b < batch; ++b)
            final[b * FEEDBACK + f] = h[(FED_BACK_ROW + f) * batch + b];
}

#define FORWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_forward(h, s, theta, in_row, fan_in, out_row, units, kernel, bias, kind, batch);
#define BACKWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_backward(h, s, delta, lanes, theta, in_row, fan_in, out_row, units, kernel, bias, batch);

/* The recurrence from x̂_0 (or s_0) = `initial` (B, FEEDBACK), zeros for NULL, over
 * batch-major inputs (B, T, width): x, or with codes_given the codes z for the decoder alone.
 * With `record` step t keeps its workspace and slopes in work[t], slopes[t] (each
 * (T, ROWS, B)) for frae_backward; without, one (ROWS, B) workspace is reused. Writes
 * batch-major outputs (B, T, F), codes (B, T, L) and the feedback after the last step, x̂_T
 * (or s_T), into final (B, FEEDBACK), each where not NULL: the caller's arrays are read and
 * written in place, never transposed. */
static inline void forward(const float *inputs, const float *initial, int codes_given,
                           const float *theta, float *work, float *slopes, float *outputs,
                           float *codes, float *final, long steps, long width, long batch,
                           int record) {
    const long plane = (long)ROWS * batch, input_row = codes_given ? CODE_ROW : 0;
    for (long t = 0; t < steps; ++t) {
        float *h = work + (record ? t * plane : 0), *s = slopes + (record ? t * plane : 0);
        /* s_{t-1} into the encoder input, where the GRU reads it too; or x̂_{t-1} into both
         * the encoder's input and the decoder's */
        if (t == 0)
            feed_in(h, initial, batch);
        else
            memcpy(h + (long)FEEDBACK_A * batch,
                   (record ? h - plane : h) + (long)FED_BACK_ROW * batch,
                   sizeof(float) * FEEDBACK * batch);
#ifndef FRAE_GRU
        memcpy(h + (long)FEEDBACK_D * batch, h + (long)FEEDBACK_A * batch,
               sizeof(float) * FEATURES * batch);
#endif
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
#ifdef FRAE_GRU
        if (batch == 1)
            gru_forward_one(h, theta);
        else
            gru_forward(h, theta, batch);
#endif
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
    if (final)
        feed_out(work + (record ? (steps - 1) * plane : 0), final, batch);
}

/* One streaming call: from the state `initial` to the state `final`, each (B, FEEDBACK). */
void frae_forward(const float *inputs, const float *initial, int codes_given, const float *theta,
                  float *work, float *slopes, float *outputs, float *codes, float *final,
                  long steps, long width, long batch) {
    forward(inputs, initial, codes_given, theta, work, slopes, outputs, codes, final, steps, width,
            batch, 0);
}

/* The forward of x (B, T, F) from zeros for frae_backward, which reads x̂_t from work[t]. */
void frae_forward_recorded(const float *inputs, const float *theta, float *work, float *slopes,
                           long steps, long batch) {
    forward(inputs, NULL, 0, theta, work, slopes, NULL, NULL, NULL, steps, FEATURES, batch, 1);
}

#ifdef FRAE_GRU
/* frae_backward with state feedback: the loss's gradient reaches x̂_t alone; `carry` (STATE,
 * B) is d loss/d s_t from step t+1, added to what the decoder sends back to s_t; through the
 * GRU and the encoder, what reaches s_{t-1} is the next carry. */
void frae_backward(const float *work, const float *slopes, const float *targets, float scale,
                   const float *theta, float *delta, float *carry, float *lanes, double *loss,
                   long steps, long batch) {
    const long plane = (long)ROWS * batch, block = STATE * batch;
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
                d[b] = scale * error;
            }
        }
        FRAE_DECODER_LAYERS_REVERSED(BACKWARD)
#pragma omp simd
        for (long k = 0; k < block; ++k)
            delta[(long)STATE_ROW * batch + k] += carry[k];
        if (batch == 1)
            gru_backward_one(h, delta, lanes, theta);
        else
            gru_backward(h, delta, lanes, theta, batch);
        FRAE_ENCODER_LAYERS_REVERSED(BACKWARD)
        memcpy(carry, delta + (long)PREVIOUS_ROW * batch, sizeof(float) * block);
    }
}
#else
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
#endif
