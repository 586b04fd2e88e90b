/* The FRAE forward and back-propagation through time in C, written as matrix products.
 *
 * For layers of tens to hundreds of units a step is a few matrix products, and the loops
 * over single weights of simd_floor.c leave most of the machine idle. Here one step is a
 * (B, ROWS) workspace, batch-major: row b holds all that sequence b computes at that step,
 * in the order of bench/baselines/layout.py (the encoder input [x_t, x̂_{t-1}], each layer's
 * output, the decoder input [z_t, x̂_{t-1}], ..., x̂_t last), so a layer reads columns
 * [in_row, in_row + fan_in) of every row and writes [out_row, out_row + units). The weights
 * are layout.py's flat vector, kernels (in, out) row-major.
 *
 * A layer's product runs over BLOCK rows at a time, each row of the kernel loaded once for
 * all of them, the innermost loop over contiguous output columns. An output narrower than a
 * vector (the latent code, x̂) is instead a dot product per column with a row of the
 * kernel's transpose, which each call copies once. Training keeps every step's workspace
 * and slopes (T, B, ROWS), carries only d loss/d x̂ (B, F) back from step to step, turns the
 * slopes into d loss/d pre-activation in place, and forms each weight's gradient after the
 * reverse loop as one product over all T·B rows.
 *
 * Compiled as simd_floor.c is (bench/baselines/matrix_floor.py): fast math, omp simd, glibc's
 * vector expf and tanhf, every size but B and T a compile-time constant of frae_plan.h.
 */
#include <math.h>
#include <string.h>

#include "frae_plan.h"

enum { SWISH = 0, TANH = 1, SIGMOID = 2, LINEAR = 3 };
/* Rows per block: 4 and 8 measured alike at widths 64 and 256; 2 was slower. */
enum { BLOCK = 4 };
/* Narrower outputs than one 512-bit vector take the dot-product form. */
enum { LANES = 16 };

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

/* c[r, :n] += a[r, :m] @ M for `rows` rows spaced ROWS apart; M (m, n) row-major, or, for n
 * narrower than a vector, its transpose Mt (n, m) read a row per dot product. */
static inline void product(const float *restrict a, int m, const float *restrict M,
                           const float *restrict Mt, int n, float *restrict c, int rows) {
    if (n >= LANES || n >= m) {
        for (int k = 0; k < m; ++k) {
            const float *w = M + (long)k * n;
            for (int r = 0; r < rows; ++r) {
                const float x = a[(long)r * ROWS + k];
                float *out = c + (long)r * ROWS;
#pragma omp simd
                for (int j = 0; j < n; ++j)
                    out[j] += x * w[j];
            }
        }
    } else {
        for (int r = 0; r < rows; ++r)
            for (int j = 0; j < n; ++j) {
                const float *x = a + (long)r * ROWS, *w = Mt + (long)j * m;
                float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                for (int k = 0; k < m; ++k)
                    sum += x[k] * w[k];
                c[(long)r * ROWS + j] += sum;
            }
    }
}

/* h[r, out] = act(b + h[r, in] @ W) for `rows` rows; the slopes into s[r, out] if `record`. */
static inline void dense_block(float *h, float *s, const float *theta, const float *transposed,
                               int in_row, int fan_in, int out_row, int units, int kernel,
                               int bias, int kind, int rows, int record) {
    for (int r = 0; r < rows; ++r)
        memcpy(h + (long)r * ROWS + out_row, theta + bias, sizeof(float) * units);
    product(h + in_row, fan_in, theta + kernel, transposed + kernel, units, h + out_row, rows);
    for (int r = 0; r < rows; ++r) {
        float *out = h + (long)r * ROWS + out_row, *slope = s + (long)r * ROWS + out_row;
        if (record) {
#pragma omp simd
            for (int j = 0; j < units; ++j)
                out[j] = activate(out[j], kind, &slope[j]);
        } else {
#pragma omp simd
            for (int j = 0; j < units; ++j) {
                float unused;
                out[j] = activate(out[j], kind, &unused);
            }
        }
    }
}

static inline void dense_forward(float *h, float *s, const float *theta, const float *transposed,
                                 int in_row, int fan_in, int out_row, int units, int kernel,
                                 int bias, int kind, long batch, int record) {
    long b = 0;
    for (; b + BLOCK <= batch; b += BLOCK)
        dense_block(h + b * ROWS, s + b * ROWS, theta, transposed, in_row, fan_in, out_row, units,
                    kernel, bias, kind, BLOCK, record);
    for (; b < batch; ++b)
        dense_block(h + b * ROWS, s + b * ROWS, theta, transposed, in_row, fan_in, out_row, units,
                    kernel, bias, kind, 1, record);
}

/* g[r, in] = (g[r, out] ⊙ s[r, out]) @ Wᵀ; the product g ⊙ s, d loss/d pre-activation, is
 * left in s[r, out] for the weights' gradients. */
static inline void dense_backward(float *g, float *s, const float *theta, const float *transposed,
                                  int in_row, int fan_in, int out_row, int units, int kernel,
                                  long batch) {
    for (long b = 0; b < batch; b += BLOCK) {
        const int rows = batch - b < BLOCK ? (int)(batch - b) : BLOCK;
        float *g_block = g + b * ROWS, *d_block = s + b * ROWS;
        for (int r = 0; r < rows; ++r) {
            float *d = d_block + (long)r * ROWS + out_row;
            const float *g_out = g_block + (long)r * ROWS + out_row;
#pragma omp simd
            for (int j = 0; j < units; ++j)
                d[j] *= g_out[j];
            memset(g_block + (long)r * ROWS + in_row, 0, sizeof(float) * fan_in);
        }
        product(d_block + out_row, units, transposed + kernel, theta + kernel, fan_in,
                g_block + in_row, rows);
    }
}

/* M[k, j] += Σ_r a[r, k] c[r, j] over `rows` rows spaced ROWS apart, M (m, n) row-major:
 * BLOCK rows at a time, so each row of M is loaded and stored once per BLOCK products. */
static inline void outer_sum(const float *restrict a, int m, const float *restrict c, int n,
                             float *restrict M, long rows) {
    long r = 0;
    for (; r + BLOCK <= rows; r += BLOCK) {
        const float *a_block = a + r * ROWS, *c_block = c + r * ROWS;
        for (int k = 0; k < m; ++k) {
            float *row = M + (long)k * n;
#pragma omp simd
            for (int j = 0; j < n; ++j) {
                float sum = row[j];
                for (int i = 0; i < BLOCK; ++i)
                    sum += a_block[(long)i * ROWS + k] * c_block[(long)i * ROWS + j];
                row[j] = sum;
            }
        }
    }
    for (; r < rows; ++r)
        for (int k = 0; k < m; ++k) {
            const float x = a[r * ROWS + k];
#pragma omp simd
            for (int j = 0; j < n; ++j)
                M[(long)k * n + j] += x * c[r * ROWS + j];
        }
}

/* dW = Σ_r h[r, in]ᵀ d[r, out] and db = Σ_r d[r, out] over every recorded row; a kernel
 * narrower than a vector sums its transpose, in `scratch`, and copies it back. */
static inline void dense_weights(const float *work, const float *deltas, float *grads,
                                 float *scratch, int in_row, int fan_in, int out_row, int units,
                                 int kernel, int bias, long rows) {
    float *d_kernel = grads + kernel, *d_bias = grads + bias;
    memset(d_bias, 0, sizeof(float) * units);
    for (long r = 0; r < rows; ++r) {
        const float *d = deltas + r * ROWS + out_row;
#pragma omp simd
        for (int j = 0; j < units; ++j)
            d_bias[j] += d[j];
    }
    if (units >= LANES || units >= fan_in) {
        memset(d_kernel, 0, sizeof(float) * fan_in * units);
        outer_sum(work + in_row, fan_in, deltas + out_row, units, d_kernel, rows);
        return;
    }
    memset(scratch, 0, sizeof(float) * fan_in * units);
    outer_sum(deltas + out_row, units, work + in_row, fan_in, scratch, rows);
    for (int k = 0; k < fan_in; ++k)
        for (int j = 0; j < units; ++j)
            d_kernel[k * units + j] = scratch[j * fan_in + k];
}

#define TRANSPOSE(in_row, fan_in, out_row, units, kernel, bias, kind) \
    for (int k = 0; k < fan_in; ++k)                                  \
        for (int j = 0; j < units; ++j)                               \
            transposed[kernel + j * fan_in + k] = theta[kernel + k * units + j];
#define FORWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_forward(h, s, theta, transposed, in_row, fan_in, out_row, units, kernel, bias, kind, \
                  batch, record);
#define BACKWARD(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_backward(g, s, theta, transposed, in_row, fan_in, out_row, units, kernel, batch);
#define WEIGHTS_OF(in_row, fan_in, out_row, units, kernel, bias, kind) \
    dense_weights(work, slopes, grads, scratch, in_row, fan_in, out_row, units, kernel, bias, \
                  steps * batch);

/* Each kernel (fan_in, units) of theta as its transpose (units, fan_in), at the same offset. */
static void transpose_kernels(const float *theta, float *transposed) {
    FRAE_LAYERS(TRANSPOSE)
}

/* The recurrence from x̂_0 = 0 over batch-major inputs (B, T, width): x, or with codes_given
 * the codes z for the decoder alone. With `record` step t keeps its workspace and slopes in
 * work[t], slopes[t] (each (T, B, ROWS)); without, one (B, ROWS) workspace is reused and no
 * slope is kept. Writes batch-major outputs (B, T, F) and codes (B, T, L) where not NULL. */
static inline void forward(const float *inputs, int codes_given, const float *theta,
                           const float *transposed, float *work, float *slopes, float *outputs,
                           float *codes, long steps, long width, long batch, int record) {
    const long plane = (long)ROWS * batch, input_row = codes_given ? CODE_ROW : 0;
    for (long t = 0; t < steps; ++t) {
        float *h = work + (record ? t * plane : 0), *s = record ? slopes + t * plane : h;
        const float *previous = record ? h - plane : h;
        for (long b = 0; b < batch; ++b) {
            float *row = h + b * ROWS;
            for (int f = 0; f < FEATURES; ++f) {
                const float fed = t == 0 ? 0.0f : previous[b * ROWS + OUTPUT_ROW + f];
                row[FEEDBACK_A + f] = fed;
                row[FEEDBACK_D + f] = fed;
            }
            memcpy(row + input_row, inputs + (b * steps + t) * width, sizeof(float) * width);
        }
        if (!codes_given) {
            FRAE_ENCODER_LAYERS(FORWARD)
        }
        FRAE_DECODER_LAYERS(FORWARD)
        for (long b = 0; outputs && b < batch; ++b)
            memcpy(outputs + (b * steps + t) * FEATURES, h + b * ROWS + OUTPUT_ROW,
                   sizeof(float) * FEATURES);
        for (long b = 0; codes && b < batch; ++b)
            memcpy(codes + (b * steps + t) * LATENT, h + b * ROWS + CODE_ROW,
                   sizeof(float) * LATENT);
    }
}

/* x̂ (outputs) or z (codes) of inputs (B, T, width), one (B, ROWS) workspace reused;
 * `transposed` (WEIGHTS) receives the kernels' transposes. */
void frae_forward(const float *inputs, int codes_given, const float *theta, float *transposed,
                  float *work, float *outputs, float *codes, long steps, long width, long batch) {
    transpose_kernels(theta, transposed);
    forward(inputs, codes_given, theta, transposed, work, work, outputs, codes, steps, width,
            batch, 0);
}

/* mean((x̂ - y)²) over x (B, T, F) and targets y (B, T, F), into loss (1, double), and its
 * gradient, into grads (WEIGHTS); scale is 2/(B·T·F).
 *
 * The gradient reaching x̂_t is the loss's own, scale·(x̂_t - y_t), plus `carry` (B, F): what
 * flows back from step t+1 through both blocks that received x̂_t. `gradient` (B, ROWS) holds
 * each column's gradient at one step; work and slopes are (T, B, ROWS); `scratch` (WEIGHTS)
 * holds a narrow kernel's transposed gradient. */
void frae_loss_and_grads(const float *inputs, const float *targets, float scale,
                         const float *theta, float *transposed, float *work, float *slopes,
                         float *gradient, float *carry, float *scratch, float *grads,
                         double *loss, long steps, long batch) {
    const long plane = (long)ROWS * batch;
    transpose_kernels(theta, transposed);
    forward(inputs, 0, theta, transposed, work, slopes, NULL, NULL, steps, FEATURES, batch, 1);
    float *g = gradient;
    double sum = 0.0;
    memset(carry, 0, sizeof(float) * FEATURES * batch);
    for (long t = steps - 1; t >= 0; --t) {
        const float *h = work + t * plane;
        float *s = slopes + t * plane;
        for (long b = 0; b < batch; ++b)
            for (int f = 0; f < FEATURES; ++f) {
                const float error =
                    h[b * ROWS + OUTPUT_ROW + f] - targets[(b * steps + t) * FEATURES + f];
                sum += (double)error * error;
                g[b * ROWS + OUTPUT_ROW + f] = scale * error + carry[b * FEATURES + f];
            }
        FRAE_LAYERS_REVERSED(BACKWARD)
        for (long b = 0; b < batch; ++b)
            for (int f = 0; f < FEATURES; ++f)
                carry[b * FEATURES + f] = g[b * ROWS + FEEDBACK_A + f] + g[b * ROWS + FEEDBACK_D + f];
    }
    *loss = sum;
    FRAE_LAYERS(WEIGHTS_OF)
}
