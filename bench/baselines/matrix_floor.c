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
 * kernel's transpose, which each call copies once. The sums of a tile of rows and columns
 * stay in registers. Training keeps every step's workspace and slopes (T, B, ROWS), carries
 * only d loss/d x̂ (B, F) back from step to step, turns the slopes into d loss/d
 * pre-activation in place, and forms each weight's gradient as one product over all T·B
 * rows, summed chunk by chunk in the reverse loop while the rows are still in cache.
 *
 * Compiled as simd_floor.c is (bench/baselines/matrix_floor.py): fast math, omp simd, glibc's
 * vector expf and tanhf, every size but B and T a compile-time constant of frae_plan.h; and
 * with OpenMP, whose threads (OMP_NUM_THREADS, the benchmark's --threads) split a layer's
 * blocks of rows and a weight gradient's rows where a product is large enough to pay for
 * them (PARALLEL_WORK multiply-adds). Each row is summed by one thread in one order, so the
 * results are the same on any number of threads.
 */
#include <math.h>
#include <string.h>

#include "frae_activate.h"
#include "frae_plan.h"

/* Rows per block: a tile of 4 rows by WIDE vectors keeps its sums and a kernel row's WIDE
 * vectors in registers. */
enum { BLOCK = 4 };
#ifdef __AVX512F__
/* Floats in one 512-bit vector, and vectors per tile: 16 sums of 32 registers. */
enum { LANES = 16, WIDE = 4 };
#else
/* Floats in one 256-bit vector (AVX2), and vectors per tile: 8 sums of 16 registers (a tile
 * of AVX-512's size spills its sums to memory here: 2.3× slower at width 256). */
enum { LANES = 8, WIDE = 2 };
#endif
/* Rows of the recorded steps that one pass of the weights' gradients keeps in cache. */
enum { CHUNK = 128 };
/* The least multiply-adds of one product split over threads: below it, starting them costs
 * more than they save. */
#define PARALLEL_WORK (1L << 18)

/* One vector of LANES floats in GCC's (and Clang's) vector extension, so that a tile of
 * sums stays in registers; a machine with narrower vectors splits it. Loaded and stored
 * unaligned through memcpy, which compiles to one instruction. */
typedef float vector __attribute__((vector_size(4 * LANES)));

static inline vector load(const float *p) {
    vector v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store(float *p, vector v) { memcpy(p, &v, sizeof v); }

static inline float total(vector v) {
    float sum = 0.0f;
    for (int i = 0; i < LANES; ++i)
        sum += v[i];
    return sum;
}

/* c[r, :V·LANES] += a[r, :m] @ M[:, :V·LANES] for R rows spaced ROWS apart, M (m, n)
 * row-major: each row of M loaded once for the R rows, the R·V sums in registers, each
 * split into S partial sums over every S-th k so that at least 8 chains of multiply-adds
 * run side by side (fewer leave the FMA units waiting on their latency). */
static inline void tile(const float *restrict a, int m, const float *restrict M, int n,
                        float *restrict c, int R, int V, int S) {
    vector sums[4][BLOCK][4] = {0};
    int k = 0;
    for (; k + S <= m; k += S)
#pragma GCC unroll 4
        for (int s = 0; s < S; ++s) {
            vector w[4];
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v)
                w[v] = load(M + (long)(k + s) * n + v * LANES);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const float x = a[(long)r * ROWS + k + s];
#pragma GCC unroll 4
                for (int v = 0; v < V; ++v)
                    sums[s][r][v] += x * w[v];
            }
        }
    for (; k < m; ++k)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v)
                sums[0][r][v] += a[(long)r * ROWS + k] * load(M + (long)k * n + v * LANES);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
            vector sum = load(c + (long)r * ROWS + v * LANES);
#pragma GCC unroll 4
            for (int s = 0; s < S; ++s)
                sum += sums[s][r][v];
            store(c + (long)r * ROWS + v * LANES, sum);
        }
}

/* c[r, j] += a[r, :m] · Mt[j, :m] for R rows and n columns, a vector of k at a time. */
static inline void dots(const float *restrict a, int m, const float *restrict Mt, int n,
                        float *restrict c, int R) {
    for (int j = 0; j < n; ++j) {
        const float *w = Mt + (long)j * m;
        vector sums[BLOCK] = {0};
        int k = 0;
        for (; k + LANES <= m; k += LANES) {
            const vector row = load(w + k);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r)
                sums[r] += load(a + (long)r * ROWS + k) * row;
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            float sum = total(sums[r]);
            for (int i = k; i < m; ++i)
                sum += a[(long)r * ROWS + i] * w[i];
            c[(long)r * ROWS + j] += sum;
        }
    }
}

/* c[r, :n] += a[r, :m] @ M for R rows spaced ROWS apart; M (m, n) row-major, Mt (n, m) its
 * transpose. Tiles of whole vectors of columns; the columns left over, narrower than a
 * vector (all of them in a narrow layer: the latent code, x̂), as dot products with rows
 * of Mt, or, when m is narrow too, one column at a time. */
static inline void product(const float *restrict a, int m, const float *restrict M,
                           const float *restrict Mt, int n, float *restrict c, int R) {
    int j = 0;
    for (; j + WIDE * LANES <= n; j += WIDE * LANES)
        tile(a, m, M + j, n, c + j, R, WIDE, R == 1 ? 8 / WIDE : 1);
    for (; j + LANES <= n; j += LANES)
        tile(a, m, M + j, n, c + j, R, 1, R == 1 ? 4 : 2);
    if (j == n)
        return;
    if (m >= LANES) {
        dots(a, m, Mt + (long)j * m, n - j, c + j, R);
        return;
    }
    for (int k = 0; k < m; ++k)
        for (int r = 0; r < R; ++r) {
            const float x = a[(long)r * ROWS + k];
            float *out = c + (long)r * ROWS;
#pragma omp simd
            for (int i = j; i < n; ++i)
                out[i] += x * M[(long)k * n + i];
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
    const long blocks = batch / BLOCK;
#pragma omp parallel for schedule(static) if (batch * fan_in * units >= PARALLEL_WORK)
    for (long i = 0; i < blocks; ++i)
        dense_block(h + i * BLOCK * ROWS, s + i * BLOCK * ROWS, theta, transposed, in_row, fan_in,
                    out_row, units, kernel, bias, kind, BLOCK, record);
    for (long b = blocks * BLOCK; b < batch; ++b)
        dense_block(h + b * ROWS, s + b * ROWS, theta, transposed, in_row, fan_in, out_row, units,
                    kernel, bias, kind, 1, record);
}

/* g[r, in] = (g[r, out] ⊙ s[r, out]) @ Wᵀ; the product g ⊙ s, d loss/d pre-activation, is
 * left in s[r, out] for the weights' gradients. */
static inline void backward_block(float *g, float *s, const float *theta,
                                  const float *transposed, int in_row, int fan_in, int out_row,
                                  int units, int kernel, int rows) {
    for (int r = 0; r < rows; ++r) {
        float *d = s + (long)r * ROWS + out_row;
        const float *g_out = g + (long)r * ROWS + out_row;
#pragma omp simd
        for (int j = 0; j < units; ++j)
            d[j] *= g_out[j];
        memset(g + (long)r * ROWS + in_row, 0, sizeof(float) * fan_in);
    }
    product(s + out_row, units, transposed + kernel, theta + kernel, fan_in, g + in_row, rows);
}

static inline void dense_backward(float *g, float *s, const float *theta, const float *transposed,
                                  int in_row, int fan_in, int out_row, int units, int kernel,
                                  long batch) {
    const long blocks = batch / BLOCK;
#pragma omp parallel for schedule(static) if (batch * fan_in * units >= PARALLEL_WORK)
    for (long i = 0; i < blocks; ++i)
        backward_block(g + i * BLOCK * ROWS, s + i * BLOCK * ROWS, theta, transposed, in_row,
                       fan_in, out_row, units, kernel, BLOCK);
    for (long b = blocks * BLOCK; b < batch; ++b)
        backward_block(g + b * ROWS, s + b * ROWS, theta, transposed, in_row, fan_in, out_row,
                       units, kernel, 1);
}

/* M[p, :V·LANES] += Σ_r a[r, p] c[r, :V·LANES] for P rows p of M (m, n) row-major, over
 * `count` rows r spaced ROWS apart: the P·V sums in registers. */
static inline void outer_tile(const float *restrict a, const float *restrict c, int n,
                              float *restrict M, long count, int P, int V) {
    vector sums[4][4] = {0};
    for (long r = 0; r < count; ++r) {
        vector row[4];
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v)
            row[v] = load(c + r * ROWS + v * LANES);
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
            const float x = a[r * ROWS + p];
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v)
                sums[p][v] += x * row[v];
        }
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v)
            store(M + (long)p * n + v * LANES, load(M + (long)p * n + v * LANES) + sums[p][v]);
}

/* M[p, :n] += Σ_r a[r, p] c[r, :n] for P rows p of M: tiles of whole vectors of columns,
 * then the columns left over one at a time. */
static inline void outer_rows(const float *restrict a, const float *restrict c, int n,
                              float *restrict M, long count, int P) {
    int j = 0;
    for (; j + WIDE * LANES <= n; j += WIDE * LANES)
        outer_tile(a, c + j, n, M + j, count, P, WIDE);
    for (; j + LANES <= n; j += LANES)
        outer_tile(a, c + j, n, M + j, count, P, 1);
    for (; j < n; ++j)
        for (int p = 0; p < P; ++p) {
            float sum = 0.0f;
            for (long r = 0; r < count; ++r)
                sum += a[r * ROWS + p] * c[r * ROWS + j];
            M[(long)p * n + j] += sum;
        }
}

/* M[k, j] += Σ_r a[r, k] c[r, j] over `count` rows spaced ROWS apart, M (m, n) row-major,
 * four rows of M at a time. */
static inline void outer_sum(const float *restrict a, int m, const float *restrict c, int n,
                             float *restrict M, long count) {
    const int quads = m / 4;
#pragma omp parallel for schedule(static) if (count * m * n >= PARALLEL_WORK)
    for (int i = 0; i < quads; ++i)
        outer_rows(a + 4 * i, c, n, M + 4L * i * n, count, 4);
    for (int k = quads * 4; k < m; ++k)
        outer_rows(a + k, c, n, M + (long)k * n, count, 1);
}

/* dW += Σ_r h[r, in]ᵀ d[r, out] and db += Σ_r d[r, out] over `rows` recorded rows, CHUNK
 * at a time so that they stay in cache while each tile of dW passes over them. A kernel
 * narrower than a vector sums its transpose instead, at its own offset in `scratch`, which
 * narrow_weights copies back. */
static inline void dense_weights(const float *work, const float *deltas, float *grads,
                                 float *scratch, int in_row, int fan_in, int out_row, int units,
                                 int kernel, int bias, long rows) {
    float *d_bias = grads + bias;
    for (long r0 = 0; r0 < rows; r0 += CHUNK) {
        const long count = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        const float *h = work + r0 * ROWS + in_row, *d = deltas + r0 * ROWS + out_row;
        if (units < LANES && fan_in > units)
            outer_sum(d, units, h, fan_in, scratch + kernel, count);
        else
            outer_sum(h, fan_in, d, units, grads + kernel, count);
        for (long r = 0; r < count; ++r)
#pragma omp simd
            for (int j = 0; j < units; ++j)
                d_bias[j] += d[r * ROWS + j];
    }
}

static inline void narrow_weights(const float *scratch, float *grads, int fan_in, int units,
                                  int kernel) {
    for (int k = 0; units < LANES && fan_in > units && k < fan_in; ++k)
        for (int j = 0; j < units; ++j)
            grads[kernel + k * units + j] = scratch[kernel + j * fan_in + k];
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
    dense_weights(work + t * plane, slopes + t * plane, grads, scratch, in_row, fan_in, out_row, \
                  units, kernel, bias, (last - t) * batch);
#define NARROW_WEIGHTS(in_row, fan_in, out_row, units, kernel, bias, kind) \
    narrow_weights(scratch, grads, fan_in, units, kernel);

/* Each kernel (fan_in, units) of theta as its transpose (units, fan_in), at the same offset. */
static void transpose_kernels(const float *theta, float *transposed) {
    FRAE_LAYERS(TRANSPOSE)
}

/* The recurrence from x̂_0 = `initial` (B, F), zeros for NULL, over batch-major inputs
 * (B, T, width): x, or with codes_given the codes z for the decoder alone. With `record` step
 * t keeps its workspace and slopes in work[t], slopes[t] (each (T, B, ROWS)); without, one
 * (B, ROWS) workspace is reused and no slope is kept. Writes batch-major outputs (B, T, F),
 * codes (B, T, L) and x̂_T into final (B, F), each where not NULL. */
static inline void forward(const float *inputs, const float *initial, int codes_given,
                           const float *theta, const float *transposed, float *work, float *slopes,
                           float *outputs, float *codes, float *final, long steps, long width,
                           long batch, int record) {
    const long plane = (long)ROWS * batch, input_row = codes_given ? CODE_ROW : 0;
    for (long t = 0; t < steps; ++t) {
        float *h = work + (record ? t * plane : 0), *s = record ? slopes + t * plane : h;
        /* x̂_{t-1}: the last step's output row, or the state given (one row of it per b) */
        const float *previous = t > 0 ? (record ? h - plane : h) + OUTPUT_ROW : initial;
        const long spacing = t > 0 ? ROWS : FEATURES;
        for (long b = 0; b < batch; ++b) {
            float *row = h + b * ROWS;
            for (int f = 0; f < FEATURES; ++f) {
                const float fed = previous ? previous[b * spacing + f] : 0.0f;
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
    const float *last = work + (record ? (steps - 1) * plane : 0);
    for (long b = 0; final && b < batch; ++b)
        memcpy(final + b * FEATURES, last + b * ROWS + OUTPUT_ROW, sizeof(float) * FEATURES);
}

/* x̂ (outputs) or z (codes) of inputs (B, T, width) from the state `initial` (B, F), and the
 * state after the last step into final (B, F), one (B, ROWS) workspace reused; `transposed`
 * (WEIGHTS) receives the kernels' transposes. */
void frae_forward(const float *inputs, const float *initial, int codes_given, const float *theta,
                  float *transposed, float *work, float *outputs, float *codes, float *final,
                  long steps, long width, long batch) {
    transpose_kernels(theta, transposed);
    forward(inputs, initial, codes_given, theta, transposed, work, work, outputs, codes, final,
            steps, width, batch, 0);
}

/* mean((x̂ - y)²) over x (B, T, F) and targets y (B, T, F), into loss (1, double), and its
 * gradient, into grads (WEIGHTS); scale is 2/(B·T·F).
 *
 * The gradient reaching x̂_t is the loss's own, scale·(x̂_t - y_t), plus `carry` (B, F): what
 * flows back from step t+1 through both blocks that received x̂_t. `gradient` (B, ROWS) holds
 * each column's gradient at one step; work and slopes are (T, B, ROWS); `scratch` (WEIGHTS)
 * holds narrow kernels' transposed gradients.
 *
 * The weights' gradients are one product over all T·B recorded rows, formed in the reverse
 * loop as soon as the steps not yet summed hold CHUNK rows, while they are still in cache:
 * reading them back from memory after the loop took longer than the product itself. */
void frae_loss_and_grads(const float *inputs, const float *targets, float scale,
                         const float *theta, float *transposed, float *work, float *slopes,
                         float *gradient, float *carry, float *scratch, float *grads,
                         double *loss, long steps, long batch) {
    const long plane = (long)ROWS * batch;
    transpose_kernels(theta, transposed);
    forward(inputs, NULL, 0, theta, transposed, work, slopes, NULL, NULL, NULL, steps, FEATURES,
            batch, 1);
    float *g = gradient;
    double sum = 0.0;
    memset(carry, 0, sizeof(float) * FEATURES * batch);
    memset(grads, 0, sizeof(float) * WEIGHTS);
    memset(scratch, 0, sizeof(float) * WEIGHTS);
    long last = steps; /* steps [t, last) are back-propagated but not yet in the sums */
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
        if ((last - t) * batch >= CHUNK || t == 0) {
            FRAE_LAYERS(WEIGHTS_OF)
            last = t;
        }
    }
    *loss = sum;
    FRAE_LAYERS(NARROW_WEIGHTS)
}
