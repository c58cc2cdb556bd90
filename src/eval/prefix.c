// prefix.c: the schedule of shared prefixes of a batch (prefix.h): items -> groups, roots,
// item nodes, private nodes and leaves -> sub-batches that fit the cache -> pieces packed into
// forward calls.
#include "eval/prefix.h"

#include <stdlib.h>

static int floor_to(int x, int a) { return x / a * a; }
static int min2(int a, int b) { return a < b ? a : b; }

static int lcp(const struct eval_seq *a, const struct eval_seq *b) {
    const int n = min2(a->n, b->n);
    int i = 0;
    while (i < n && a->tok[i] == b->tok[i]) i++;
    return i;
}
static int first_scored(const struct eval_seq *q) { return q->n_rows ? q->pos[0] : q->n; }

struct item_info {
    int P;        // aligned shared prefix that needs no logits
    int group;
    int node_row; // store row of the item node [R, P) (sub-batch)
};
struct group_info { int ref, R, count; }; // ref: the plan sequence holding the root's tokens
struct seq_info { int st, priv_end, priv_row; }; // leaf [st or priv_end, n); private node [st, priv_end)

struct builder {
    const struct eval_plan *p;
    int A, S, MT, MTa, row_base, item0, item1;
    struct item_info *it;
    struct group_info *gr;
    struct seq_info *sq;
    struct prefix_sched *s;
    int cap, call_tok, call_n, call_leaf, open;
    struct err *e;
};

// ---- pieces and calls ----
static int push(struct builder *B, struct prefix_piece pc, int leaf) {
    struct prefix_sched *s = B->s;
    const int len = pc.end - pc.start;
    if (!B->open || B->call_tok + len > B->MT || leaf != B->call_leaf || B->call_n >= B->MT) {
        s->n_calls++;
        B->call_tok = B->call_n = 0, B->call_leaf = leaf, B->open = 1;
    }
    if (s->n_pieces == B->cap) {
        int nc = B->cap ? 2 * B->cap : 256;
        struct prefix_piece *np = realloc(s->pieces, (size_t)nc * sizeof *np);
        if (!np) return err_set(B->e, ERR_NOMEM, "prefix: out of memory");
        s->pieces = np, B->cap = nc;
    }
    pc.call = s->n_calls - 1;
    s->pieces[s->n_pieces++] = pc;
    B->call_tok += len, B->call_n++;
    s->tokens += len;
    if (!leaf) s->stored += len;
    return 0;
}

static void past_add(struct attn_past *p, int row, int len) {
    if (len <= 0) return;
    p->row[p->n_seg] = row, p->len[p->n_seg] = len;
    p->n_seg++, p->n += len;
}

// A stored node: positions [start, end) of sequence seq at store rows [row, ...), after the
// cached segments of past; chunk k of every node in round k (a chunk reads the earlier ones).
struct node { int seq, start, end, row; struct attn_past past; };
static int push_nodes(struct builder *B, const struct node *nd, int n) {
    for (int k = 0;; k++) {
        int any = 0, rc;
        B->open = 0; // a round starts a call: its chunks read the previous round's rows
        for (int i = 0; i < n; i++) {
            const int a = nd[i].start + k * B->MTa;
            if (a >= nd[i].end) continue;
            struct prefix_piece pc = {.seq = nd[i].seq, .start = a, .end = min2(a + B->MTa, nd[i].end),
                                      .past = nd[i].past, .save_row = nd[i].row + k * B->MTa, .out_row = -1};
            past_add(&pc.past, nd[i].row, k * B->MTa);
            pc.save_n = pc.end - pc.start;
            if ((rc = push(B, pc, 0))) return rc;
            any = 1;
        }
        if (!any) return 0;
    }
}

// ---- items, groups, leaves ----
static void plan_items(struct builder *B) {
    const struct eval_plan *p = B->p;
    for (int i = B->item0; i < B->item1; i++) {
        const int s0 = p->item_seq[i], s1 = p->item_seq[i + 1];
        int L = p->seq[s0].n, f = first_scored(&p->seq[s0]);
        for (int s = s0 + 1; s < s1; s++) L = min2(L, lcp(&p->seq[s0], &p->seq[s])), f = min2(f, first_scored(&p->seq[s]));
        B->it[i - B->item0].P = floor_to(min2(L, f), B->A);
    }
    // groups: join while the item shares a long aligned prefix with the group and no more with
    // the next item (prefix.h)
    int g = -1;
    for (int i = B->item0; i < B->item1; i++) {
        struct item_info *it = &B->it[i - B->item0];
        const struct eval_seq *q = &p->seq[p->item_seq[i]];
        if (g >= 0) {
            struct group_info *G = &B->gr[g];
            const int c = floor_to(min2(min2(lcp(&p->seq[G->ref], q), it->P), G->R), B->A);
            int nxt = 0;
            if (i + 1 < B->item1)
                nxt = floor_to(min2(min2(lcp(q, &p->seq[p->item_seq[i + 1]]), it->P), B->it[i + 1 - B->item0].P), B->A);
            if (c > 0 && 2 * c >= G->R && nxt <= c) {
                G->R = c, G->count++, it->group = g;
                continue;
            }
        }
        g++;
        B->gr[g] = (struct group_info){p->item_seq[i], it->P, 1};
        it->group = g;
    }
    B->s->n_groups = 0;
    for (int k = 0; k <= g; k++) {
        if (B->gr[k].count < 2) B->gr[k].R = 0;
        else if (B->gr[k].R > 0) B->s->n_groups++;
    }
}

static int root_len(const struct builder *B, int i) { return B->gr[B->it[i - B->item0].group].R; }
static int has_node(const struct builder *B, int i) {
    const struct eval_plan *p = B->p;
    return p->item_seq[i + 1] - p->item_seq[i] >= 2 && B->it[i - B->item0].P > root_len(B, i);
}

// Leaf starts; a leaf longer than max_tokens gets a private node up to its first scored row.
static int plan_leaves(struct builder *B) {
    const struct eval_plan *p = B->p;
    const int s_base = p->item_seq[B->item0];
    for (int i = B->item0; i < B->item1; i++)
        for (int s = p->item_seq[i]; s < p->item_seq[i + 1]; s++) {
            struct seq_info *si = &B->sq[s - s_base];
            si->st = has_node(B, i) ? B->it[i - B->item0].P : root_len(B, i);
            si->priv_end = si->st;
            const int n = p->seq[s].n;
            if (n - si->st > B->MT) si->priv_end = floor_to(first_scored(&p->seq[s]), B->A);
            if (si->priv_end < si->st) si->priv_end = si->st;
            if (n - si->priv_end > B->MT)
                return err_set(B->e, ERR_RANGE, "prefix: item %d: %d positions after the cached prefix %d exceed "
                               "--batch-tokens %d", i, n - si->priv_end, si->priv_end, B->MT);
        }
    return 0;
}

// Store rows item i needs besides its group's root.
static int item_need(const struct builder *B, int i) {
    const struct eval_plan *p = B->p;
    int need = has_node(B, i) ? B->it[i - B->item0].P - root_len(B, i) : 0;
    for (int s = p->item_seq[i]; s < p->item_seq[i + 1]; s++) {
        const struct seq_info *si = &B->sq[s - p->item_seq[B->item0]];
        need += si->priv_end - si->st;
    }
    return need;
}

// The sub-batch from item i: consecutive items whose stored rows fit the cache, with at most one
// group root among them. *end: its end; *root: the group with a root (-1: none).
static int sub_batch(const struct builder *B, int i, int *end, int *root) {
    int total = 0, j = i;
    *root = -1;
    for (; j < B->item1; j++) {
        const int g = B->it[j - B->item0].group, multi = B->gr[g].R > 0;
        if (multi && *root >= 0 && g != *root) break;
        const int add = (multi && *root < 0 ? B->gr[g].R : 0) + item_need(B, j);
        if (total + add > B->S) {
            if (j > i) break;
            return err_set(B->e, ERR_RANGE, "prefix: item %d needs %d cached positions, the cache holds %d", j, add, B->S);
        }
        total += add;
        if (multi && *root < 0) *root = g;
    }
    *end = j;
    return 0;
}

// ---- one sub-batch: its root (unless resident), item nodes, private nodes, leaves ----
// The cached segments before item i's own positions: its group's root, its item node.
static void item_past(const struct builder *B, int i, struct attn_past *p) {
    *p = (struct attn_past){0};
    const int R = root_len(B, i);
    past_add(p, 0, R); // a root always sits at rows [0, R)
    if (has_node(B, i)) past_add(p, B->it[i - B->item0].node_row, B->it[i - B->item0].P - R);
}

// Leaves of items [i, j) in plan order, checking that every leaf's cached positions hold its
// own tokens (the schedule's invariant; a failure is a bug, never a silent inexact result).
static int push_leaves(struct builder *B, int i, int j) {
    const struct eval_plan *p = B->p;
    B->open = 0;
    for (int it = i; it < j; it++) {
        const struct eval_seq *ref = &p->seq[B->gr[B->it[it - B->item0].group].ref], *s0 = &p->seq[p->item_seq[it]];
        for (int s = p->item_seq[it]; s < p->item_seq[it + 1]; s++) {
            const struct seq_info *si = &B->sq[s - p->item_seq[B->item0]];
            const struct eval_seq *q = &p->seq[s];
            if (lcp(q, ref) < root_len(B, it) || (has_node(B, it) && lcp(q, s0) < B->it[it - B->item0].P))
                return err_set(B->e, ERR_INTERNAL, "prefix: item %d sequence %d does not hold its cached tokens", it, s);
            struct prefix_piece pc = {.seq = s, .start = si->priv_end, .end = q->n, .n_out = q->n_rows,
                                      .out_row = q->row0 - B->row_base};
            item_past(B, it, &pc.past);
            past_add(&pc.past, si->priv_row, si->priv_end - si->st);
            int rc = push(B, pc, 1);
            if (rc) return rc;
        }
    }
    return 0;
}

static int emit_sub(struct builder *B, int i, int j, int root, int *resident, struct node *nd) {
    const struct eval_plan *p = B->p;
    const int s_base = p->item_seq[B->item0];
    int rc, row = root >= 0 ? B->gr[root].R : 0, nn = 0;
    if (root >= 0 && *resident != root) {
        struct node r = {B->gr[root].ref, 0, B->gr[root].R, 0, {0}};
        if ((rc = push_nodes(B, &r, 1))) return rc;
    }
    *resident = root; // without a root, nodes start at row 0 and overwrite any older root
    for (int it = i; it < j; it++) {
        if (!has_node(B, it)) continue;
        struct item_info *ii = &B->it[it - B->item0];
        nd[nn] = (struct node){p->item_seq[it], root_len(B, it), ii->P, row, {0}};
        past_add(&nd[nn].past, 0, root_len(B, it));
        ii->node_row = row;
        row += ii->P - root_len(B, it);
        nn++;
    }
    if ((rc = push_nodes(B, nd, nn))) return rc;
    nn = 0;
    for (int it = i; it < j; it++)
        for (int s = p->item_seq[it]; s < p->item_seq[it + 1]; s++) {
            struct seq_info *si = &B->sq[s - s_base];
            if (si->priv_end <= si->st) continue;
            nd[nn] = (struct node){s, si->st, si->priv_end, row, {0}};
            item_past(B, it, &nd[nn].past);
            si->priv_row = row;
            row += si->priv_end - si->st;
            nn++;
        }
    if ((rc = push_nodes(B, nd, nn))) return rc;
    return push_leaves(B, i, j);
}

int prefix_schedule(struct prefix_sched *s, const struct eval_plan *p, const struct prefix_window *w,
                    const struct prefix_limits *lim, struct err *e) {
    const int item0 = w->item0, item1 = w->item1, row_base = w->row_base;
    const int align = lim->align, store_rows = lim->store_rows, max_tokens = lim->max_tokens;
    memset(s, 0, sizeof *s);
    if (item1 <= item0) return 0;
    if (align < 1 || max_tokens < align)
        return err_set(e, ERR_RANGE, "prefix: --batch-tokens %d is below the attention alignment %d", max_tokens, align);
    struct builder B = {.p = p, .A = align, .S = store_rows, .MT = max_tokens, .MTa = floor_to(max_tokens, align),
                        .row_base = row_base, .item0 = item0, .item1 = item1, .s = s, .e = e};
    const int ni = item1 - item0, ns = p->item_seq[item1] - p->item_seq[item0];
    B.it = calloc((size_t)ni, sizeof *B.it);
    B.gr = calloc((size_t)ni, sizeof *B.gr);
    B.sq = calloc((size_t)ns, sizeof *B.sq);
    struct node *nd = malloc((size_t)(ni + ns) * sizeof *nd);
    int rc = 0;
    if (!B.it || !B.gr || !B.sq || !nd) rc = err_set(e, ERR_NOMEM, "prefix: out of memory");
    if (!rc) {
        plan_items(&B);
        rc = plan_leaves(&B);
    }
    for (int i = item0, resident = -1; i < item1 && !rc; s->n_sub++) {
        int j = item1, root = -1;
        if (!(rc = sub_batch(&B, i, &j, &root))) rc = emit_sub(&B, i, j, root, &resident, nd);
        i = j;
    }
    free(B.it), free(B.gr), free(B.sq), free(nd);
    if (rc) prefix_sched_free(s);
    return rc;
}

void prefix_sched_free(struct prefix_sched *s) {
    if (!s) return;
    free(s->pieces);
    memset(s, 0, sizeof *s);
}

int prefix_store_rows(const struct eval_plan *p, int max_tokens, int align_max) {
    // private nodes (leaves longer than max_tokens) of one item are stored together. A leaf of
    // an item with two or more sequences starts at or after its node's end P_i =
    // floor_A(min(LCP, first scored)) >= min(LCP, first scored) - (align_max - 1) (or at its
    // root, which is longer); a private node ends at or before the first scored position.
    int64_t priv = max_tokens;
    for (int i = 0; i < p->n_items; i++) {
        const int s0 = p->item_seq[i], s1 = p->item_seq[i + 1];
        int lo = 0;
        if (s1 - s0 >= 2) {
            int L = p->seq[s0].n, f = first_scored(&p->seq[s0]);
            for (int s = s0 + 1; s < s1; s++) L = min2(L, lcp(&p->seq[s0], &p->seq[s])), f = min2(f, first_scored(&p->seq[s]));
            lo = min2(L, f) - (align_max - 1);
            lo = lo > 0 ? lo : 0;
        }
        int64_t need = 0;
        for (int s = s0; s < s1; s++)
            if (p->seq[s].n - lo > max_tokens && first_scored(&p->seq[s]) > lo) need += first_scored(&p->seq[s]) - lo;
        priv = need > priv ? need : priv;
    }
    const int64_t n = (int64_t)p->max_seq_len + priv;
    return n > INT32_MAX ? INT32_MAX : (int)n;
}
