// test_cost.c: the cost counter against hand-derived closed forms and a brute-force mask
// walk, the Table 10 reproduction with the default parameter file (spec/cost.md section 4),
// parameter-file validation errors, and the `cost` subcommand's shape reading.
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "attention/attn.h"
#include "attention/cost.h"
#include "base/json_util.h"
#include "test.h"

#define DEFAULT_PARAMS "configs/ascend/paper-fit.json"

static const unsigned F_BF16 = ATTN_F_ROUND_INPUT | ATTN_F_TILED;
static const unsigned F_DIRECT = ATTN_F_ROUND_INPUT | ATTN_F_TILED | ATTN_F_QUANT;
static const unsigned F_HIFA4 = ATTN_F_ROUND_INPUT | ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN |
                                ATTN_F_SQK | ATTN_F_PREORDER;
static const unsigned F_HIFA4_CH = ATTN_F_ROUND_INPUT | ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN |
                                   ATTN_F_SQK | ATTN_F_PREORDER | ATTN_F_QMEAN_CH;

// Independent count: walk every visible (i, j) and mark its (row block, key tile) pair.
static int64_t brute_tiles(int T, int W, int Br, int Bc) {
    int nb = (T + Br - 1) / Br, nt = (T + Bc - 1) / Bc;
    char *seen = calloc((size_t)nb * (size_t)nt, 1);
    int64_t n = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            if (W > 0 && i - j >= W) continue;
            char *s = &seen[(size_t)(i / Br) * (size_t)nt + (size_t)(j / Bc)];
            if (!*s) { *s = 1; n++; }
        }
    free(seen);
    return n;
}

static void test_visited_tiles(void) {
    // causal, T a multiple of the tile, Br = Bc = B: nb(nb+1)/2
    for (int nb = 1; nb <= 9; nb++)
        for (int B = 16; B <= 128; B *= 2)
            CHECK(cost_visited_tiles(nb * B, 0, B, B) == (int64_t)nb * (nb + 1) / 2, "nb=%d B=%d: %lld", nb, B,
                  (long long)cost_visited_tiles(nb * B, 0, B, B));
    // the paper's shape: 320 blocks -> 51360 pairs per head
    CHECK(cost_visited_tiles(40960, 0, 128, 128) == 51360, "T=40960: %lld", (long long)cost_visited_tiles(40960, 0, 128, 128));
    // Br = 2*Bc, T = n*Br: block b covers key tiles 0..2b+1 -> sum (2b+2) = n(n+1)
    CHECK(cost_visited_tiles(5 * 128, 0, 128, 64) == 30, "Br=2Bc: %lld", (long long)cost_visited_tiles(640, 0, 128, 64));
    // T not a multiple of the tile: T = nb*B + r, 0 < r < B -> (nb+1)(nb+2)/2 (edge block and
    // tile count as full ones)
    CHECK(cost_visited_tiles(3 * 128 + 5, 0, 128, 128) == 10, "T=389: %lld", (long long)cost_visited_tiles(389, 0, 128, 128));
    CHECK(cost_visited_tiles(1, 0, 128, 128) == 1, "T=1");
    CHECK(cost_visited_tiles(127, 0, 128, 128) == 1, "T=127");
    CHECK(cost_visited_tiles(129, 0, 128, 128) == 3, "T=129");
    // window W = w*B (Br = Bc = B): block b visits b+1 tiles for b < w, w+1 after
    // (the tile holding key i_lo - W + 1 is only partly visible)
    {
        int B = 64, nb = 10, w = 3;
        int64_t want = (int64_t)w * (w + 1) / 2 + (int64_t)(nb - w) * (w + 1);
        CHECK(cost_visited_tiles(nb * B, w * B, B, B) == want, "window: %lld want %lld",
              (long long)cost_visited_tiles(nb * B, w * B, B, B), (long long)want);
    }
    // window 1: only the diagonal tiles
    CHECK(cost_visited_tiles(1000, 1, 100, 100) == 10, "W=1: %lld", (long long)cost_visited_tiles(1000, 1, 100, 100));
    // window >= T is no window
    CHECK(cost_visited_tiles(1000, 5000, 64, 64) == cost_visited_tiles(1000, 0, 64, 64), "W >= T");
    // degenerate inputs
    CHECK(cost_visited_tiles(0, 0, 128, 128) == 0 && cost_visited_tiles(10, 0, 0, 128) == 0 &&
              cost_visited_tiles(10, 0, 128, 0) == 0, "degenerate inputs must give 0");
    // brute force over odd shapes, windows and tile sizes
    int bad = 0;
    const int Ts[] = {1, 2, 63, 64, 65, 127, 200, 333};
    const int Ws[] = {0, 1, 5, 16, 17, 64, 100, 400};
    const int Bs[][2] = {{16, 16}, {16, 32}, {32, 16}, {48, 80}, {64, 64}, {7, 13}};
    for (size_t a = 0; a < sizeof Ts / sizeof *Ts; a++)
        for (size_t b = 0; b < sizeof Ws / sizeof *Ws; b++)
            for (size_t c = 0; c < sizeof Bs / sizeof *Bs; c++) {
                int64_t got = cost_visited_tiles(Ts[a], Ws[b], Bs[c][0], Bs[c][1]);
                int64_t want = brute_tiles(Ts[a], Ws[b], Bs[c][0], Bs[c][1]);
                if (got != want && bad++ < 5)
                    fprintf(stderr, "T=%d W=%d Br=%d Bc=%d: got %lld brute %lld\n", Ts[a], Ws[b], Bs[c][0],
                            Bs[c][1], (long long)got, (long long)want);
            }
    CHECK(bad == 0, "%d shapes differ from the brute-force mask walk", bad);
}

// A worked example by hand: T = 256, Br = Bc = 128, H = 2, Hkv = 1, d = 64.
// nb = 2 -> 3 pairs per head, 6 tiles; E = 6 * 128*128 = 98304 score elements;
// rows = 6 * 128 = 768; QK MACs = E * 64 = 6291456; T*H*d = 32768, T*Hkv*d = 16384.
static void test_counts_worked(void) {
    struct cost_counts c = {0};
    cost_count_call(&c, F_BF16, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(c.calls == 1 && c.tokens == 256 && c.tiles == 6, "calls %lld tokens %lld tiles %lld", (long long)c.calls,
          (long long)c.tokens, (long long)c.tiles);
    CHECK(c.mac16_qk == 6291456 && c.mac16_pv == 6291456 && c.mac16_ones == 0, "bf16 macs %lld %lld %lld",
          (long long)c.mac16_qk, (long long)c.mac16_pv, (long long)c.mac16_ones);
    CHECK(c.mac4_qk == 0 && c.mac4_pv == 0 && c.mac4_ones == 0, "bf16 must have no 4-bit MACs");
    CHECK(c.vop[COST_V_MAX] == 98304 && c.vop[COST_V_SUB] == 98304 && c.vop[COST_V_EXP] == 98304 &&
              c.vop[COST_V_SUM] == 98304 && c.vop[COST_V_CAST] == 98304,
          "bf16 element ops");
    CHECK(c.vop[COST_V_QDQ] == 0 && c.vop[COST_V_ADD] == 0, "bf16 has no qdq/add");
    CHECK(c.vop[COST_V_ROW_MR] == 1536 && c.vop[COST_V_ROW_MR_EXP] == 768 && c.vop[COST_V_ROW_L] == 1536 &&
              c.vop[COST_V_ROW_O] == 768 * 64,
          "bf16 row ops %lld %lld %lld %lld", (long long)c.vop[COST_V_ROW_MR], (long long)c.vop[COST_V_ROW_MR_EXP],
          (long long)c.vop[COST_V_ROW_L], (long long)c.vop[COST_V_ROW_O]);
    CHECK(c.vop[COST_V_QKV_QDQ] == 0 && c.vop[COST_V_SMOOTH] == 0 && c.vop[COST_V_QMEAN] == 0 &&
              c.vop[COST_V_FINAL] == 32768,
          "bf16 other ops");
    // Q 32768 + K 16384 + V 16384 + O 32768 = 98304 elements at 2 bytes
    CHECK(c.elems16 == 98304 && c.bytes16 == 196608 && c.elems4 == 0 && c.bytes4 == 0, "bf16 bytes %lld",
          (long long)c.bytes16);

    struct cost_counts h = {0};
    cost_count_call(&h, F_HIFA4, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(h.mac4_qk == 6291456 && h.mac4_pv == 6291456 && h.mac4_ones == 98304 && h.mac16_qk == 0 &&
              h.mac16_pv == 0 && h.mac16_ones == 0,
          "hifa4 macs: preorder adds Br*Bc per tile");
    CHECK(h.vop[COST_V_SUM] == 0 && h.vop[COST_V_CAST] == 0 && h.vop[COST_V_QDQ] == 98304 &&
              h.vop[COST_V_ADD] == 98304 && h.vop[COST_V_MAX] == 98304,
          "hifa4 element ops");
    // HiF4 of Q, K, V: 32768 + 2*16384; Smooth-QK and Q-Mean: 32768 + 16384
    CHECK(h.vop[COST_V_QKV_QDQ] == 65536 && h.vop[COST_V_SMOOTH] == 49152 && h.vop[COST_V_QMEAN] == 49152 &&
              h.vop[COST_V_FINAL] == 32768,
          "hifa4 other ops %lld %lld %lld", (long long)h.vop[COST_V_QKV_QDQ], (long long)h.vop[COST_V_SMOOTH],
          (long long)h.vop[COST_V_QMEAN]);
    // Q, K, V as HiF4 (65536 elements = 1024 units of 36 bytes), O at 16 bits
    CHECK(h.elems4 == 65536 && h.bytes4 == 36864.0 && h.elems16 == 32768 && h.bytes16 == 65536,
          "hifa4 bytes4 %.1f bytes16 %lld", h.bytes4, (long long)h.bytes16);

    // The channel form of Q-Mean on the same shape: the same score-element ops, plus the mu . K^T
    // GEMV per visited tile (6 tiles x Bc 128 keys x d 64 = 49152 multiply-adds), and a column
    // mean over each query tile (2 tiles x Br 128 rows x H 2 x d 64 = 32768) instead of the row
    // means and kappa (32768 + 16384 = 49152). Everything else equal.
    struct cost_counts ch = {0};
    cost_count_call(&ch, F_HIFA4_CH, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(ch.vop[COST_V_QMEAN_GEMV] == 49152 && ch.vop[COST_V_QMEAN] == 32768 && ch.vop[COST_V_ADD] == 98304 &&
              h.vop[COST_V_QMEAN_GEMV] == 0,
          "channel form: gemv %lld qmean %lld add %lld", (long long)ch.vop[COST_V_QMEAN_GEMV],
          (long long)ch.vop[COST_V_QMEAN], (long long)ch.vop[COST_V_ADD]);
    {
        struct cost_counts x = ch;
        x.vop[COST_V_QMEAN_GEMV] = h.vop[COST_V_QMEAN_GEMV], x.vop[COST_V_QMEAN] = h.vop[COST_V_QMEAN];
        CHECK(memcmp(&x, &h, sizeof x) == 0, "channel form: counts other than qmean_gemv and qmean differ from the token form");
    }
    // a partial last query tile counts like a full one (T = 200: tiles [0,128), [128,200) padded to
    // 128 rows): column mean 2 x 128 x 2 x 64 = 32768, not T*H*d = 25600; 3 pairs x 2 heads = 6 tiles
    struct cost_counts rag = {0};
    cost_count_call(&rag, F_HIFA4_CH, &(struct cost_shape){200, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(rag.vop[COST_V_QMEAN] == 32768 && rag.vop[COST_V_QMEAN_GEMV] == 6 * 128 * 64 && rag.tiles == 6,
          "channel form, T=200: qmean %lld gemv %lld tiles %lld", (long long)rag.vop[COST_V_QMEAN],
          (long long)rag.vop[COST_V_QMEAN_GEMV], (long long)rag.tiles);
    // ATTN_F_QMEAN_CH without ATTN_F_QMEAN counts nothing extra
    struct cost_counts d1 = {0}, d2 = {0};
    cost_count_call(&d1, F_DIRECT | ATTN_F_QMEAN_CH, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    cost_count_call(&d2, F_DIRECT, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(memcmp(&d1, &d2, sizeof d1) == 0, "ATTN_F_QMEAN_CH alone changed the counts");

    struct cost_counts dq = {0};
    cost_count_call(&dq, F_DIRECT, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    CHECK(dq.mac4_ones == 0 && dq.vop[COST_V_SUM] == 98304 && dq.vop[COST_V_ADD] == 0 && dq.vop[COST_V_SMOOTH] == 0 &&
              dq.vop[COST_V_QMEAN] == 0 && dq.vop[COST_V_QDQ] == 98304 && dq.vop[COST_V_CAST] == 0,
          "direct: row sum on the vector path, no Q-Mean / Smooth-QK / ones column");
}

// General closed forms for every flag combination on shapes with windows and ragged T.
static void test_counts_general(void) {
    const int shapes[][7] = { // T, H, Hkv, d, window, Br, Bc
        {1000, 4, 2, 96, 0, 128, 128}, {777, 6, 3, 64, 100, 64, 128}, {4096, 8, 1, 128, 1024, 128, 64},
        {1, 2, 2, 32, 0, 128, 128}, {300, 3, 1, 80, 7, 16, 16},
    };
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (unsigned f = 0; f < 128; f++) { // every combination of the 7 flags, channel form included
            const int *x = shapes[s];
            int64_t T = x[0], H = x[1], Hkv = x[2], d = x[3], Br = x[5], Bc = x[6];
            int64_t Nt = brute_tiles(x[0], x[4], x[5], x[6]);
            int64_t E = Nt * H * Br * Bc, R = Nt * H * Br;
            int q = !!(f & ATTN_F_QUANT), p = !!(f & ATTN_F_PREORDER), m = !!(f & ATTN_F_QMEAN), k = !!(f & ATTN_F_SQK);
            int ch = m && (f & ATTN_F_QMEAN_CH);
            int64_t qmean_other = !m ? 0 : ch ? (T + Br - 1) / Br * Br * H * d : T * H * d + T * Hkv * d;
            struct cost_counts c = {0};
            cost_count_call(&c, f, &(struct cost_shape){x[0], x[1], x[2], x[3], x[4], x[5], x[6]}, NULL);
            int64_t mac16 = q ? 0 : E * d, mac4 = q ? E * d : 0, ones = p ? E : 0;
            int ok = c.tiles == Nt * H && c.mac16_qk == mac16 && c.mac16_pv == mac16 && c.mac4_qk == mac4 &&
                     c.mac4_pv == mac4 && c.mac16_ones == (q ? 0 : ones) && c.mac4_ones == (q ? ones : 0) &&
                     c.vop[COST_V_MAX] == E && c.vop[COST_V_SUB] == E && c.vop[COST_V_EXP] == E &&
                     c.vop[COST_V_SUM] == (p ? 0 : E) && c.vop[COST_V_CAST] == (q ? 0 : E) &&
                     c.vop[COST_V_QDQ] == (q ? E : 0) && c.vop[COST_V_ADD] == (m ? E : 0) &&
                     c.vop[COST_V_QMEAN_GEMV] == (ch ? Nt * H * Bc * d : 0) &&
                     c.vop[COST_V_ROW_MR] == 2 * R && c.vop[COST_V_ROW_MR_EXP] == R && c.vop[COST_V_ROW_L] == 2 * R &&
                     c.vop[COST_V_ROW_O] == R * d && c.vop[COST_V_QKV_QDQ] == (q ? T * H * d + 2 * T * Hkv * d : 0) &&
                     c.vop[COST_V_SMOOTH] == (k ? T * (H + Hkv) * d : 0) &&
                     c.vop[COST_V_QMEAN] == qmean_other && c.vop[COST_V_FINAL] == T * H * d &&
                     c.elems16 + c.elems4 == 2 * T * H * d + 2 * T * Hkv * d && c.elems4 == (q ? T * (H + 2 * Hkv) * d : 0) &&
                     c.bytes16 == 2 * c.elems16 && c.bytes4 * 16 == (double)c.elems4 * 9;
            if (!ok && bad++ < 5) fprintf(stderr, "shape %zu flags 0x%x: counts differ from the closed forms\n", s, f);
        }
    CHECK(bad == 0, "%d (shape, flags) pairs differ from the closed forms", bad);

    // cost_add of two calls = accumulating both calls
    struct cost_counts a = {0}, b = {0}, both = {0};
    cost_count_call(&a, F_HIFA4, &(struct cost_shape){500, 4, 2, 64, 0, 128, 128}, NULL);
    cost_count_call(&b, F_HIFA4, &(struct cost_shape){300, 4, 2, 64, 64, 64, 64}, NULL);
    cost_count_call(&both, F_HIFA4, &(struct cost_shape){500, 4, 2, 64, 0, 128, 128}, NULL);
    cost_count_call(&both, F_HIFA4, &(struct cost_shape){300, 4, 2, 64, 64, 64, 64}, NULL);
    cost_add(&a, &b, NULL);
    CHECK(memcmp(&a, &both, sizeof a) == 0, "cost_add differs from accumulating the calls");
    CHECK(a.calls == 2 && a.tokens == 800, "calls %lld tokens %lld", (long long)a.calls, (long long)a.tokens);

    // invalid shapes add nothing
    struct cost_counts z = {0}, zero = {0};
    cost_count_call(&z, F_BF16, &(struct cost_shape){0, 4, 2, 64, 0, 128, 128}, NULL);
    cost_count_call(&z, F_BF16, &(struct cost_shape){10, 0, 2, 64, 0, 128, 128}, NULL);
    cost_count_call(&z, F_BF16, &(struct cost_shape){10, 4, 2, 64, 0, 0, 128}, NULL);
    CHECK(memcmp(&z, &zero, sizeof z) == 0, "invalid shapes must add nothing");
}

static void test_counts_json(void) {
    struct cost_counts c = {0};
    cost_count_call(&c, F_HIFA4, &(struct cost_shape){256, 2, 1, 64, 0, 128, 128}, NULL);
    cJSON *j = cost_counts_json(&c);
    CHECK(j != NULL, "cost_counts_json returned NULL");
    if (!j) return;
    const cJSON *cube = cJSON_GetObjectItemCaseSensitive(j, "cube_macs");
    const cJSON *vec = cJSON_GetObjectItemCaseSensitive(j, "vector_ops");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(j, "bytes");
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "tiles")->valuedouble == 6, "tiles");
    CHECK(cube && cJSON_GetObjectItemCaseSensitive(cube, "qk4")->valuedouble == 6291456 &&
              cJSON_GetObjectItemCaseSensitive(cube, "ones4")->valuedouble == 98304,
          "cube_macs in JSON");
    int n = 0;
    for (const cJSON *it = vec ? vec->child : NULL; it; it = it->next) n++;
    CHECK(n == COST_V_COUNT, "vector_ops has %d entries, want %d", n, COST_V_COUNT);
    CHECK(vec && cJSON_GetObjectItemCaseSensitive(vec, "qdq")->valuedouble == 98304 &&
              cJSON_GetObjectItemCaseSensitive(vec, "sum")->valuedouble == 0,
          "vector_ops values");
    CHECK(bytes && cJSON_GetObjectItemCaseSensitive(bytes, "bytes4")->valuedouble == 36864.0, "bytes4");
    // big counts survive printing exactly (below 2^53)
    struct cost_counts big = {0};
    big.mac4_qk = (1LL << 52) + 1;
    cJSON *bj = cost_counts_json(&big);
    char *txt = bj ? cJSON_PrintUnformatted(bj) : NULL;
    CHECK(txt && strstr(txt, "\"qk4\":4503599627370497"), "2^52+1 printed exactly: %s", txt ? txt : "(null)");
    free(txt);
    cJSON_Delete(bj);
    // round trip, and a damaged object is refused naming the field
    struct cost_counts back;
    struct err e = {0};
    CHECK(cost_counts_from_json(&back, j, "run.json", &e) == 0 && memcmp(&back, &c, sizeof c) == 0,
          "round trip: %s", e.msg);
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "vector_ops"), "qdq", cJSON_CreateNumber(-3));
    CHECK(cost_counts_from_json(&back, j, "run.json", &e) < 0 && strstr(e.msg, "run.json: vector_ops") &&
              strstr(e.msg, "'qdq'"),
          "negative count: %s", e.msg);
    // run.json files written before the channel form have no qmean_gemv: read as 0
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "vector_ops"), "qdq", cJSON_CreateNumber(98304));
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "vector_ops"), "qmean_gemv");
    CHECK(cost_counts_from_json(&back, j, "run.json", &e) == 0 && memcmp(&back, &c, sizeof c) == 0,
          "without qmean_gemv: %s", e.msg);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "tiles");
    CHECK(cost_counts_from_json(&back, j, "run.json", &e) < 0 && strstr(e.msg, "'tiles'"), "missing field: %s", e.msg);
    cJSON_Delete(j);
}

// ---- Table 10 (spec/cost.md sections 3 and 4) ----
static void test_table10(void) {
    struct cost_params p;
    struct err e = {0};
    int rc = cost_params_load(&p, DEFAULT_PARAMS, &e);
    CHECK(rc == 0, "loading %s: %s", DEFAULT_PARAMS, e.msg);
    if (rc) return;
    // Qwen3-8B: 36 layers, 32 query heads, 8 kv heads, d = 128, no sliding window; T = 40960
    const unsigned flags[3] = {F_BF16, F_DIRECT, F_HIFA4};
    const double paper[3][3] = {{1.00, 0.49, 1.00}, {0.25, 1.46, 0.73}, {0.25, 1.29, 0.65}}; // cube, softmax, relative
    const int vector_bound[3] = {0, 1, 1};
    struct cost_cycles cy[3];
    for (int m = 0; m < 3; m++) {
        struct cost_counts c = {0};
        for (int l = 0; l < 36; l++) cost_count_call(&c, flags[m], &(struct cost_shape){40960, 32, 8, 128, 0, 128, 128}, NULL);
        cost_cycles(&cy[m], &c, &p);
    }
    for (int m = 0; m < 3; m++) {
        double cube = cy[m].cube / cy[0].cube, soft = cy[m].softmax / cy[0].cube, rel = cy[m].critical / cy[0].critical;
        printf("table10 %-6s cube %.4f softmax %.4f relative %.4f %s\n", m == 0 ? "bf16" : m == 1 ? "direct" : "hifa4",
               cube, soft, rel, cy[m].vector_bound ? "Vector" : "Cube");
        CHECK_CLOSE(cube, paper[m][0], 0.02, 0);
        CHECK_CLOSE(soft, paper[m][1], 0.02, 0);
        CHECK_CLOSE(rel, paper[m][2], 0.02, 0);
        CHECK(cy[m].vector_bound == vector_bound[m], "mode %d bottleneck", m);
    }
    // the model's form: relative = max(cube, softmax / n_vector_units) / bf16 cube when bf16 is Cube-bound
    CHECK_CLOSE(cy[2].critical, cy[2].softmax / p.n_vector_units, 0, 1e-15);
    // HiFA4's cube includes the ones column: 1/4 * (1 + 1/(2d))
    CHECK_CLOSE(cy[2].cube / cy[0].cube, 0.25 * (1.0 + 1.0 / 256), 0, 1e-12);
}

// ---- counts at the edge of 64 bits ----
// A 70B shape (80 layers, 64/8 heads, d 128) at the largest accepted --seq (4M tokens): each
// count fits in 64 bits but QK + PV MACs do not, and the cycle model summed them in int64 (a
// negative Softmax column). The counts must equal the closed forms, the cycles must be
// positive and equal the same sums in binary64. A shape whose counts do not fit is refused
// naming the count, and the accumulator is left as it was.
static void test_counts_overflow(void) {
    struct cost_params p;
    struct err e = {0};
    CHECK(cost_params_load(&p, DEFAULT_PARAMS, &e) == 0, "%s", e.msg);
    const int T = 1 << 22, L = 80, H = 64, Hkv = 8, d = 128;
    struct cost_counts c = {0};
    int rc = 0;
    for (int l = 0; l < L && !rc; l++) rc = cost_count_call(&c, F_BF16, &(struct cost_shape){T, H, Hkv, d, 0, 128, 128}, &e);
    CHECK(rc == 0, "70B at T=4M: %s", e.msg);
    const int64_t nb = T / 128, tiles = nb * (nb + 1) / 2 * H; // causal: block i visits i+1 tiles
    CHECK(c.tiles == tiles * L && c.mac16_qk == tiles * 16384 * d * L && c.mac16_pv == c.mac16_qk,
          "tiles %lld, qk %lld", (long long)c.tiles, (long long)c.mac16_qk);
    struct cost_cycles cy;
    cost_cycles(&cy, &c, &p);
    const double cube = 2.0 * (double)c.mac16_qk / p.cube_macs_per_cycle_16;
    CHECK(cy.cube > 0 && cy.softmax > 0 && cy.critical > 0, "cycles positive: cube %g softmax %g", cy.cube, cy.softmax);
    CHECK_CLOSE(cy.cube, cube, 0, 1e-15);
    // 4096 layers x 1024 heads x head_dim 65536: QK MACs of one call exceed 2^63
    struct cost_counts before = c;
    rc = cost_count_call(&c, F_BF16, &(struct cost_shape){T, 1024, 1, 65536, 0, 128, 128}, &e);
    CHECK(rc == ERR_RANGE && strstr(e.msg, "cube_macs.qk16") && strstr(e.msg, "2^63") && !memcmp(&c, &before, sizeof c),
          "overflow refused naming the count: rc %d: %s", rc, e.msg);
    // the running total overflowing (one call fits, the sum does not) is refused too
    struct cost_counts big = {0};
    big.mac16_qk = INT64_MAX - 5;
    before = big;
    rc = cost_add(&big, &c, &e);
    CHECK(rc == ERR_RANGE && strstr(e.msg, "cube_macs.qk16") && !memcmp(&big, &before, sizeof big), "sum overflow: %s", e.msg);
}

// ---- parameter-file validation ----
static const char *tmpdir(void) {
    const char *t = getenv("HIFA4_TMP");
    return t && t[0] ? t : "build/tmp";
}

// Writes the default file with one edit: path "a" or "a.b" of a parameter's "value" (set to
// v, or removed when del) or a raw top-level key.
static int write_variant(char *out, size_t n, const char *tag, const char *key, const char *sub,
                         const char *field, cJSON *val, int del) {
    cJSON *j = NULL;
    struct err e = {0};
    if (json_parse_file(&j, DEFAULT_PARAMS, &e)) { cJSON_Delete(val); return -1; }
    cJSON *o = cJSON_GetObjectItemCaseSensitive(j, key);
    if (sub) o = cJSON_GetObjectItemCaseSensitive(o, sub);
    cJSON *parent = field ? o : (sub ? cJSON_GetObjectItemCaseSensitive(j, key) : j);
    const char *name = field ? field : (sub ? sub : key);
    if (del) {
        cJSON_DeleteItemFromObjectCaseSensitive(parent, name);
        cJSON_Delete(val);
    } else if (cJSON_GetObjectItemCaseSensitive(parent, name)) {
        cJSON_ReplaceItemInObjectCaseSensitive(parent, name, val);
    } else {
        cJSON_AddItemToObject(parent, name, val);
    }
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    snprintf(out, n, "%s/cost-%s.json", tmpdir(), tag);
    int rc = txt ? file_write_atomic(out, txt, strlen(txt), &e) : -1;
    free(txt);
    return rc;
}

static void expect_error(const char *path, const char *want1, const char *want2) {
    struct cost_params p;
    struct err e = {0};
    int rc = cost_params_load(&p, path, &e);
    CHECK(rc < 0, "%s: expected an error", path);
    CHECK(strstr(e.msg, path) != NULL, "error must name the file: %s", e.msg);
    CHECK(strstr(e.msg, want1) != NULL, "error must contain '%s': %s", want1, e.msg);
    if (want2) CHECK(strstr(e.msg, want2) != NULL, "error must contain '%s': %s", want2, e.msg);
}

static void test_params_validation(void) {
    struct err e = {0};
    if (mkdir_p(tmpdir(), &e)) { CHECK(0, "mkdir %s: %s", tmpdir(), e.msg); return; }
    char path[512];
    struct cost_params p;
    CHECK(cost_params_load(&p, DEFAULT_PARAMS, &e) == 0 && p.n_vector_units == 2 && p.cube_4bit_speedup == 4 &&
              !strcmp(p.name, "paper-fit"),
          "default params: %s", e.msg);

    CHECK(write_variant(path, sizeof path, "miss-sum", "vector_cost", "sum", NULL, NULL, 1) == 0, "write");
    expect_error(path, "vector_cost", "missing field 'sum'");
    CHECK(write_variant(path, sizeof path, "miss-lanes", "vector_lanes", NULL, NULL, NULL, 1) == 0, "write");
    expect_error(path, "missing field 'vector_lanes'", NULL);
    CHECK(write_variant(path, sizeof path, "miss-value", "vector_cost", "exp", "value", NULL, 1) == 0, "write");
    expect_error(path, "vector_cost.exp", "missing field 'value'");
    CHECK(write_variant(path, sizeof path, "miss-doc", "cube_4bit_speedup", NULL, "doc", NULL, 1) == 0, "write");
    expect_error(path, "cube_4bit_speedup", "missing field 'doc'");
    CHECK(write_variant(path, sizeof path, "neg-sum", "vector_cost", "sum", "value", cJSON_CreateNumber(-1), 0) == 0, "write");
    expect_error(path, "vector_cost.sum", "-1");
    CHECK(write_variant(path, sizeof path, "zero-cube", "cube_macs_per_cycle_16", NULL, "value", cJSON_CreateNumber(0), 0) == 0,
          "write");
    expect_error(path, "cube_macs_per_cycle_16", "must be > 0");
    CHECK(write_variant(path, sizeof path, "neg-lanes", "vector_lanes", NULL, "value", cJSON_CreateNumber(-128), 0) == 0, "write");
    expect_error(path, "vector_lanes", "-128");
    CHECK(write_variant(path, sizeof path, "frac-units", "n_vector_units", NULL, "value", cJSON_CreateNumber(1.5), 0) == 0,
          "write");
    expect_error(path, "n_vector_units", "1.5");
    CHECK(write_variant(path, sizeof path, "str-value", "vector_cost", "max", "value", cJSON_CreateString("2"), 0) == 0,
          "write");
    expect_error(path, "vector_cost.max", "expected a number");
    CHECK(write_variant(path, sizeof path, "bad-basis", "vector_cost", "add", "basis", cJSON_CreateString("guess"), 0) == 0,
          "write");
    expect_error(path, "vector_cost.add", "guess");
    CHECK(write_variant(path, sizeof path, "empty-doc", "vector_lanes", NULL, "doc", cJSON_CreateString(""), 0) == 0, "write");
    expect_error(path, "vector_lanes", "doc");
    CHECK(write_variant(path, sizeof path, "typo-kind", "vector_cost", "rowsum", NULL, cJSON_CreateNumber(1), 0) == 0, "write");
    expect_error(path, "vector_cost", "unknown field 'rowsum'");
    CHECK(write_variant(path, sizeof path, "typo-top", "vector_lane", NULL, NULL, cJSON_CreateNumber(1), 0) == 0, "write");
    expect_error(path, "unknown field 'vector_lane'", NULL);
    CHECK(write_variant(path, sizeof path, "plain-number", "vector_lanes", NULL, NULL, cJSON_CreateNumber(128), 1) == 0 &&
              write_variant(path, sizeof path, "plain-number", "vector_lanes", NULL, NULL, cJSON_CreateNumber(128), 0) == 0,
          "write");
    expect_error(path, "vector_lanes", "expected an object");

    snprintf(path, sizeof path, "%s/cost-does-not-exist.json", tmpdir());
    int rc = cost_params_load(&p, path, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, path), "missing file: rc %d %s", rc, e.msg);
    snprintf(path, sizeof path, "%s/cost-broken.json", tmpdir());
    CHECK(file_write_atomic(path, "{\"name\": ", 9, &e) == 0, "write");
    expect_error(path, "invalid JSON", NULL);
}

// ---- the subcommand (shape from config.json alone, per-architecture windows) ----
static int run_json(const char *args, cJSON **out) {
    const char *bin = getenv("HIFA4_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "./%s cost %s --json 2>/dev/null", bin && bin[0] ? bin : "hifa4-eval", args);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    int st = pclose(f);
    *out = st == 0 ? cJSON_Parse(buf) : NULL;
    return *out ? 0 : -1;
}

static double jnum(const cJSON *o, const char *a, const char *b) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

// The text output shows the paper's Table 10 only beside its shape (Qwen3-8B's), labelled so.
static void test_cli_paper_column(void) {
    const char *bin = getenv("HIFA4_BIN");
    char cmd[512], out[1 << 14];
    static const char *const shapes[2] = {"36:32:8:128", "30:9:3:64"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "./%s cost --shape %s --seq 40960 2>/dev/null", bin && bin[0] ? bin : "hifa4-eval", shapes[k]);
        FILE *f = popen(cmd, "r");
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = 0;
        if (f) pclose(f);
        const int paper = strstr(out, "paper, Qwen3-8B's shape: 35% below") && strstr(out, "| paper (Table 10: Qwen3-8B's shape");
        CHECK(k == 0 ? paper : !paper && !strstr(out, "paper:") && strstr(out, "not shown beside another shape"),
              "cost --shape %s: the paper's column %s:\n%s", shapes[k], k == 0 ? "missing" : "beside another shape", out);
    }
}

static void test_cli(void) {
    // gemma2-tiny: 3 layers, 4 heads, sliding_window 32 on even layers (0 and 2)
    cJSON *j = NULL;
    char args0[1200];
    const char *gemma2 = TEST_NEED("goldens/models/gemma2-tiny"), *mistral = TEST_NEED("goldens/models/mistral-tiny"),
               *qwen3 = TEST_NEED("goldens/models/qwen3-tiny");
    int rc = -1;
    if (gemma2) {
        snprintf(args0, sizeof args0, "--model %s --seq 100 --tile-br 16 --tile-bc 16 --attn bf16", gemma2);
        rc = run_json(args0, &j);
        CHECK(rc == 0, "cost --model gemma2-tiny failed");
    }
    if (!rc) {
        const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "modes"), 0);
        int64_t want = 4 * (2 * brute_tiles(100, 32, 16, 16) + brute_tiles(100, 0, 16, 16));
        CHECK(jnum(j, "shape", "windowed_layers") == 2, "gemma2 windowed layers %g", jnum(j, "shape", "windowed_layers"));
        CHECK(jnum(j, "shape", "head_dim") == 64, "gemma2 head_dim");
        CHECK(jnum(cJSON_GetObjectItemCaseSensitive(m, "counts"), "tiles", NULL) == (double)want, "gemma2 tiles %g want %lld",
              jnum(cJSON_GetObjectItemCaseSensitive(m, "counts"), "tiles", NULL), (long long)want);
        cJSON_Delete(j);
    }
    // mistral-tiny: window 32 on every layer; qwen3-tiny: use_sliding_window false
    if (mistral) {
        snprintf(args0, sizeof args0, "--model %s/config.json --seq 100", mistral);
        rc = run_json(args0, &j);
        CHECK(rc == 0 && jnum(j, "shape", "windowed_layers") == 2, "mistral-tiny windows");
        cJSON_Delete(j);
    }
    if (qwen3) {
        snprintf(args0, sizeof args0, "--model %s --seq 40960", qwen3);
        rc = run_json(args0, &j);
        CHECK(rc == 0 && jnum(j, "shape", "windowed_layers") == 0 && jnum(j, "shape", "n_kv_heads") == 2, "qwen3-tiny shape");
        cJSON_Delete(j);
    }
    // Qwen3-8B shape by --shape: the table entries the paper publishes
    rc = run_json("--shape 36:32:8:128 --seq 40960", &j);
    CHECK(rc == 0, "cost --shape failed");
    if (!rc) {
        const cJSON *modes = cJSON_GetObjectItemCaseSensitive(j, "modes");
        // default modes bf16,direct,hifa4, and hifa4 in both Q-Mean forms (token first)
        CHECK(cJSON_GetArraySize(modes) == 4, "default rows bf16, direct, hifa4 token, hifa4 channel: %d",
              cJSON_GetArraySize(modes));
        const cJSON *h = cJSON_GetArrayItem(modes, 2), *hc = cJSON_GetArrayItem(modes, 3);
        const cJSON *qt = cJSON_GetObjectItemCaseSensitive(h, "qmean"), *qc = cJSON_GetObjectItemCaseSensitive(hc, "qmean");
        CHECK(cJSON_IsString(qt) && !strcmp(qt->valuestring, "token") && cJSON_IsString(qc) &&
                  !strcmp(qc->valuestring, "channel") &&
                  cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(modes, 1), "qmean")),
              "qmean fields of the rows");
        CHECK_CLOSE(jnum(h, "table10", "relative"), 0.65, 0.02, 0);
        CHECK_CLOSE(jnum(h, "table10", "softmax"), 1.29, 0.02, 0);
        // the channel form's extra GEMV: 36 layers x 51360 tiles x 32 heads x Bc 128 x d 128
        const cJSON *vec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(hc, "counts"), "vector_ops");
        CHECK(jnum(vec, "qmean_gemv", NULL) == 36.0 * 51360 * 32 * 128 * 128 && jnum(vec, "qmean", NULL) == 36.0 * 40960 * 32 * 128,
              "hifa4 channel form: qmean_gemv %.17g qmean %.17g", jnum(vec, "qmean_gemv", NULL), jnum(vec, "qmean", NULL));
        printf("cost hifa4 (Qwen3-8B, T=40960): token form softmax %.3f relative %.3f, channel form softmax %.3f relative %.3f\n",
               jnum(h, "table10", "softmax"), jnum(h, "table10", "relative"), jnum(hc, "table10", "softmax"),
               jnum(hc, "table10", "relative"));
        CHECK(jnum(hc, "table10", "relative") > jnum(h, "table10", "relative"), "the channel form's GEMV costs nothing?");
        cJSON_Delete(j);
    }
    rc = run_json("--shape 36:32:8:128 --seq 4096 --attn direct+qmean,direct --qmean channel", &j);
    CHECK(rc == 0 && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "modes")) == 2, "--qmean channel: one row per mode");
    cJSON_Delete(j);
    // a Qwen3-8B config.json (the published fields cfg_load reads, no weights), written here
    {
        char dir[512], cfg[600];
        struct err e = {0};
        snprintf(dir, sizeof dir, "%s/cost-qwen3-8b", tmpdir());
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        const char *txt = "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", "
                          "\"hidden_size\": 4096, \"intermediate_size\": 12288, \"num_hidden_layers\": 36, "
                          "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
                          "\"max_window_layers\": 36, \"sliding_window\": null, \"use_sliding_window\": false, "
                          "\"vocab_size\": 151936, \"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, "
                          "\"rope_theta\": 1000000, \"tie_word_embeddings\": false, \"hidden_act\": \"silu\"}";
        rc = mkdir_p(dir, &e) || file_write_atomic(cfg, txt, strlen(txt), &e);
        CHECK(rc == 0, "writing %s: %s", cfg, e.msg);
        char args[700];
        snprintf(args, sizeof args, "--model %s --seq 40960", dir);
        rc = rc ? rc : run_json(args, &j);
        CHECK(rc == 0, "cost --model qwen3-8b config failed");
        if (!rc) {
            const cJSON *modes = cJSON_GetObjectItemCaseSensitive(j, "modes");
            const double want[3][3] = {{1.00, 0.49, 1.00}, {0.25, 1.46, 0.73}, {0.25, 1.29, 0.65}};
            for (int m = 0; m < 3; m++) {
                const cJSON *x = cJSON_GetArrayItem(modes, m);
                CHECK_CLOSE(jnum(x, "table10", "cube"), want[m][0], 0.02, 0);
                CHECK_CLOSE(jnum(x, "table10", "softmax"), want[m][1], 0.02, 0);
                CHECK_CLOSE(jnum(x, "table10", "relative"), want[m][2], 0.02, 0);
            }
            CHECK(jnum(j, "shape", "n_layers") == 36 && jnum(j, "shape", "windowed_layers") == 0, "qwen3-8b shape");
            cJSON_Delete(j);
        }
    }
    // usage errors exit 2
    const char *bin = getenv("HIFA4_BIN");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "./%s cost --shape 36:32:7:128 --seq 10 2>/dev/null >/dev/null", bin && bin[0] ? bin : "hifa4-eval");
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "H not a multiple of Hkv must be a usage error (status %d)", st);
    snprintf(cmd, sizeof cmd, "./%s cost --shape 2:2:1:64 --seq 10 --attn bf16,nope 2>/dev/null >/dev/null",
             bin && bin[0] ? bin : "hifa4-eval");
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "unknown mode must be a usage error (status %d)", st);
    snprintf(cmd, sizeof cmd, "./%s cost --shape 2:2:1:64 --seq 10 --qmean mean 2>/dev/null >/dev/null",
             bin && bin[0] ? bin : "hifa4-eval");
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "--qmean mean must be a usage error (status %d)", st);
}

int main(void) {
    test_visited_tiles();
    test_counts_worked();
    test_counts_general();
    test_counts_json();
    test_table10();
    test_counts_overflow();
    test_params_validation();
    test_cli();
    test_cli_paper_column();
    return test_summary("test_cost");
}
