// test_hostile3.c: the third round of hostile inputs (docs/reliability.md), each class through
// the binary (HIFA4_BIN) with its exit code and message checked:
//  - inputs read as the reference tools read them, or refused: duplicate JSON keys, a stale
//    safetensors index beside model.safetensors, an unusable Hugging Face cache snapshot, odd
//    multiple-choice items, niah beyond the window, hostile GGUFs, integers that wrap, options
//    that contradict, a pathological pre-tokenizer regex, Unicode lower-casing;
//  - no command destroys an input (an output path that is an input, make-model --force,
//    temporary files, concurrent imports);
//  - clear errors naming the culprit and the fix.
// Small checkpoints are made here with make-model; nothing needs ../shared.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "cli_util.h"

static char model[1200], mc[1200];

static int same_bytes(const char *a, const char *b_in_tmp) {
    return sh("cmp -s %s %s/%s", a, tmp, b_in_tmp) == 0;
}

static void copy_model(const char *dst) { sh("rm -rf %s && cp -r %s %s", dst, model, dst); }

// Replaces the first occurrence of `from` in file path by `to`.
static void edit_file(const char *path, const char *from, const char *to) {
    char *s = slurp("%s", path);
    char *at = s ? strstr(s, from) : NULL;
    CHECK(at != NULL, "%s holds '%s'", path, from);
    if (!at) { free(s); return; }
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(s, 1, (size_t)(at - s), f);
        fputs(to, f);
        fputs(at + strlen(from), f);
        fclose(f);
    }
    free(s);
}

// ---- inputs read as the reference tools read them ----

// A key twice in one object: Python's json (transformers, lm-eval) takes the last, cJSON's
// lookup the first. Every JSON input is refused naming file, key and both values.
static void test_duplicate_keys(void) {
    char m[1300], p[1400], t[1400];
    snprintf(m, sizeof m, "%s/dupkey", tmp);
    copy_model(m);
    snprintf(p, sizeof p, "%s/config.json", m);
    edit_file(p, "\"rms_norm_eps\"", "\"rope_theta\": 10000, \"rms_norm_eps\"");
    expect(1, "config.json: key 'rope_theta' appears twice|500000|10000|takes the last", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/dk1", bin, m, mc, tmp);
    copy_model(m);
    snprintf(p, sizeof p, "%s/tokenizer.json", m);
    edit_file(p, "\"version\"", "\"version\": \"0.9\", \"version\"");
    expect(1, "tokenizer.json: key 'version' appears twice|\"0.9\"", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/dk2", bin, m, mc, tmp);
    // a TruthfulQA row in the Hugging Face layout whose labels are given twice
    snprintf(t, sizeof t, "%s/tqa_dup.jsonl", tmp);
    const char *row = "{\"question\": \"Is it?\", \"mc1_targets\": {\"choices\": [\"yes\", \"no\"], \"labels\": [1, 0], "
                      "\"labels\": [0, 1]}}\n";
    write_text(t, row, strlen(row));
    expect(1, "tqa_dup.jsonl:1|key 'labels' appears twice|[1,0]|[0,1]", BEFORE_WEIGHTS,
           "%s run --model %s --task truthfulqa_mc1 --task-file %s --attn bf16 --out %s/dk3", bin, model, t, tmp);
    // a JSONL task row
    snprintf(t, sizeof t, "%s/mc_dup.jsonl", tmp);
    row = "{\"question\": \"Q?\", \"choices\": [\"a\", \"b\"], \"answer\": 0, \"answer\": 1}\n";
    write_text(t, row, strlen(row));
    expect(1, "mc_dup.jsonl:1|key 'answer' appears twice|values 0 and 1", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --attn bf16 --out %s/dk4", bin, model, t, tmp);
}

// model.safetensors beside an index naming other shards: transformers reads the single file,
// the tool read the index.
static void test_stale_index(void) {
    char m[1300], p[1400];
    snprintf(m, sizeof m, "%s/staleidx", tmp);
    copy_model(m);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", m);
    const char *idx = "{\"metadata\": {}, \"weight_map\": {\"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\"}}";
    write_text(p, idx, strlen(idx));
    expect(1, "model.safetensors|model.safetensors.index.json|model-00001-of-00002.safetensors|stale", ANY_TIME,
           "%s run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/si1", bin, m, mc, tmp);
    // an index that maps every tensor to model.safetensors itself agrees with it
    idx = "{\"metadata\": {}, \"weight_map\": {\"model.embed_tokens.weight\": \"model.safetensors\"}}";
    write_text(p, idx, strlen(idx));
    expect(0, "", ANY_TIME, "%s --quiet run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/si2", bin,
           m, mc, tmp);
}

// A Hugging Face cache snapshot that cannot be used, offline: which of missing, dangling and
// looping, and which file (tests/test_hub.sh has the online completion).
static void test_hub_snapshot(void) {
    char hub[1300], snap[1500], rd[1400];
    snprintf(hub, sizeof hub, "%s/hfcache", tmp);
    snprintf(rd, sizeof rd, "%s/models--org--m", hub);
    const char *c = "0123456789abcdef0123456789abcdef01234567";
    snprintf(snap, sizeof snap, "%s/snapshots/%s", rd, c);
    sh("rm -rf %s && mkdir -p %s/refs %s/blobs && printf %%s %s > %s/refs/main", hub, rd, rd, c, rd);
    const char *env = "env HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:1 HF_HUB_CACHE=";
    const char *cmd = "run --model org/m --task mc_jsonl --limit 2 --attn bf16";
    expect(1, "snapshots/0123456789abcdef0123456789abcdef01234567 is unusable|its directory|is missing", BEFORE_WEIGHTS,
           "%s%s %s %s --task-file %s --out %s/hs1", env, hub, bin, cmd, mc, tmp);
    // the blobs layout: every file a symlink into blobs/
    sh("mkdir -p %s && for f in %s/*; do b=$(basename $f); cp $f %s/blobs/$b && ln -s ../../blobs/$b %s/$b; done", snap, model,
       rd, snap);
    sh("rm %s/blobs/tokenizer.json", rd);
    expect(1, "tokenizer.json is a dangling symlink to ../../blobs/tokenizer.json|blob is missing", BEFORE_WEIGHTS,
           "%s%s %s %s --task-file %s --out %s/hs2", env, hub, bin, cmd, mc, tmp);
    sh("rm %s/tokenizer.json && ln -s tokenizer.json %s/tokenizer.json", snap, snap);
    expect(1, "tokenizer.json is a symlink loop", BEFORE_WEIGHTS, "%s%s %s %s --task-file %s --out %s/hs3", env, hub, bin, cmd,
           mc, tmp);
    sh("rm %s/tokenizer.json && cp %s/tokenizer.json %s/", snap, model, snap);
    // make-model writes no tokenizer_config.json: what AutoModel alone would leave
    expect(1, "tokenizer_config.json is missing|online", BEFORE_WEIGHTS, "%s%s %s %s --task-file %s --out %s/hs4", env, hub,
           bin, cmd, mc, tmp);
    sh("mkdir -p %s/.no_exist/%s && touch %s/.no_exist/%s/tokenizer_config.json", rd, c, rd, c);
    expect(0, "", ANY_TIME, "%s%s %s --quiet %s --task-file %s --out %s/hs5", env, hub, bin, cmd, mc, tmp);
}

// A cached page that is HTML where JSON was expected.
static void test_html_json(void) {
    char m[1300], p[1400];
    snprintf(m, sizeof m, "%s/htmlcfg", tmp);
    copy_model(m);
    snprintf(p, sizeof p, "%s/config.json", m);
    const char *page = "<!DOCTYPE html>\n<html><body>Sign in to continue</body></html>\n";
    write_text(p, page, strlen(page));
    expect(1, "config.json: an HTML or XML page, not JSON|delete the file and fetch it again", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/html", bin, m, mc, tmp);
}

// Numbers that wrap: one integer parser that checks the range (4294967298 is not 2).
static void test_wrapping_numbers(void) {
    const char *run = "run --task mc_jsonl --limit 2 --attn bf16";
    expect(2, "--shard '1/4294967298'|0 <= K < N", BEFORE_WEIGHTS, "%s %s --model %s --task-file %s --shard 1/4294967298 --out %s/w1",
           bin, run, model, mc, tmp);
    expect(2, "--shard '4294967297/4'", BEFORE_WEIGHTS, "%s %s --model %s --task-file %s --shard 4294967297/4 --out %s/w2", bin, run,
           model, mc, tmp);
    expect(2, "--shard ' 1/2'", BEFORE_WEIGHTS, "%s %s --model %s --task-file %s --shard ' 1/2' --out %s/w3", bin, run, model, mc,
           tmp);
    expect(2, "--shape '4294967328:32:8:128'", ANY_TIME, "%s cost --shape 4294967328:32:8:128 --seq 4096", bin);
    expect(2, "--shape '32:32:8:4294967424'", ANY_TIME, "%s cost --shape 32:32:8:4294967424 --seq 4096", bin);
    expect(2, "--limit: expected an integer within +-2147483647, got '4294967298'", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --limit 4294967298 --attn bf16 --out %s/w4", bin, model, mc, tmp);
    expect(2, "--ctx '4294967298'", BEFORE_WEIGHTS, "%s trace --model %s --text %s --ctx 4294967298", bin, model, mc);
    expect(2, "niah: bad haystack length '4294967312'", BEFORE_WEIGHTS,
           "%s run --model %s --task niah --task-file tests/data/tasks/haystack.txt --niah-lengths 4294967312 --attn bf16 "
           "--out %s/w5", bin, model, tmp);
}

// Options whose values contradict, and list elements given twice.
static void test_contradicting_options(void) {
    expect(2, "--t-mild 4 above --t-strong 3|empty", BEFORE_WEIGHTS, "%s calibrate --model %s --calib %s --t-mild 4 --out %s/c1",
           bin, model, mc, tmp);
    expect(2, "--t-mild 4 above --t-strong 3", BEFORE_WEIGHTS, "%s diagnose --model %s --calib %s --t-mild 4", bin, model, mc);
    expect(2, "--ctx: length 64 given twice", BEFORE_WEIGHTS, "%s trace --model %s --text %s --ctx 64,128,64", bin, model, mc);
    expect(2, "niah: haystack length 64 given twice", BEFORE_WEIGHTS,
           "%s run --model %s --task niah --task-file tests/data/tasks/haystack.txt --niah-lengths 64,64 --attn bf16 --out %s/c2",
           bin, model, tmp);
}

// niah lengths beyond the model's window: refused before scoring (a truncated haystack read 0%).
static void test_niah_window(void) {
    char m[1300], hay[1400];
    snprintf(m, sizeof m, "%s/win128", tmp);
    snprintf(hay, sizeof hay, "%s/haystack.txt", tmp);
    int rc = sh("%s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --max-seq 128 --out %s "
                ">/dev/null", bin, m);
    CHECK(rc == 0, "make-model --max-seq 128");
    FILE *f = fopen(hay, "w");
    for (int i = 0; f && i < 200; i++) fprintf(f, "The grass is green and the sky is blue on day %d. ", i);
    if (f) fclose(f);
    expect(1, "task niah|longer than the model's window of 128 tokens|lower --niah-lengths", BEFORE_WEIGHTS,
           "%s run --model %s --task niah --task-file %s --niah-lengths 256 --niah-per-cell 1 --attn bf16 --out %s/nw1", bin, m,
           hay, tmp);
    expect(0, "", ANY_TIME, "%s --quiet run --model %s --task niah --task-file %s --niah-lengths 64 --niah-per-cell 1 --attn bf16 "
           "--out %s/nw2", bin, m, hay, tmp);
}

// ---- no command destroys an input ----

// An output path that is an input, under any spelling (a symlink, a hard link, ./x), for every
// command that writes a file; the input's bytes are checked unchanged.
static void test_out_is_input(void) {
    char m[1300], st[1400], txt[1400], cs[1400];
    snprintf(m, sizeof m, "%s/outin", tmp);
    copy_model(m);
    snprintf(st, sizeof st, "%s/model.safetensors", m);
    snprintf(txt, sizeof txt, "%s/calib.txt", tmp);
    FILE *f = fopen(txt, "w");
    for (int i = 0; f && i < 400; i++) fprintf(f, "Some calibration text, line %d, with words enough to tokenize.\n", i);
    if (f) fclose(f);
    sh("cp %s %s/weights.bak && ln -sf \"$(realpath %s)\" %s/link.safetensors && ln -f %s %s/hard.safetensors", st, tmp, st, tmp,
       st, tmp);
    const char *cal = "calibrate --calib-samples 2 --calib-len 16 --batch-tokens 16";
    expect(2, "--out|is a file of the input directory", BEFORE_WEIGHTS, "%s %s --model %s --calib %s --out %s", bin, cal, m, txt, st);
    expect(2, "link.safetensors is a file of the input directory", BEFORE_WEIGHTS, "%s %s --model %s --calib %s --out %s/link.safetensors", bin, cal, m, txt, tmp);
    expect(2, "hard.safetensors is a file of the input directory", BEFORE_WEIGHTS, "%s %s --model %s --calib %s --out %s/hard.safetensors", bin, cal, m, txt, tmp);
    expect(2, "is the input " , BEFORE_WEIGHTS, "%s %s --model %s --calib %s --out %s/../hostile3/calib.txt", bin, cal, m, txt, tmp);
    expect(2, "is a file of the input directory", BEFORE_WEIGHTS, "%s logits --model %s --ids 1,2 --out %s/config.json", bin, m, m);
    snprintf(cs, sizeof cs, "%s/case.safetensors", tmp);
    sh("cp %s %s", st, cs); // any file: the check comes before the case is read
    expect(2, "is the input", ANY_TIME, "%s attn --case %s --attn bf16 --out ./%s", bin, cs, cs);
    expect(2, "is the input", BEFORE_WEIGHTS, "%s run --model %s --task mc_jsonl --task-file %s --attn bf16 --out %s/", bin, m, mc, m);
    expect(2, "is the input", BEFORE_WEIGHTS, "%s trace --model %s --text %s --ctx 64 --out %s", bin, m, txt, m);
    expect(2, "is the input", BEFORE_WEIGHTS, "%s diagnose --model %s --out %s", bin, m, m);
    CHECK(same_bytes(st, "weights.bak"), "the weights changed");
    // an empty --out
    expect(2, "--out '': an empty path", BEFORE_WEIGHTS, "%s %s --model %s --calib %s --out ''", bin, cal, m, txt);
    expect(2, "--out '': an empty path", BEFORE_WEIGHTS, "%s run --model %s --task mc_jsonl --task-file %s --out ''", bin, m, mc);
    // a new file in the model directory destroys nothing
    expect(0, "", ANY_TIME, "%s --quiet %s --model %s --calib %s --out %s/scales.safetensors", bin, cal, m, txt, m);
}

// make-model into a non-empty directory: --force, as the imports.
static void test_make_model_force(void) {
    char d[1300];
    snprintf(d, sizeof d, "%s/mm", tmp);
    sh("rm -rf %s && mkdir -p %s && echo '{}' > %s/tokenizer_config.json", d, d, d);
    const char *mk = "make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128";
    expect(2, "not empty|--force", ANY_TIME, "%s %s --out %s", bin, mk, d);
    expect(0, "", ANY_TIME, "%s %s --force --out %s", bin, mk, d);
    char p[1400];
    snprintf(p, sizeof p, "%s/tokenizer_config.json", d);
    CHECK(!file_exists(p), "--force kept the old model's tokenizer_config.json");
}

// A writer killed between its temporary and the rename leaves path.tmp.PID: the next write of
// that path removes it when PID no longer runs (a live writer's stays).
static void test_stale_tmp(void) {
    char out[1300], txt[1400];
    snprintf(out, sizeof out, "%s/stale.safetensors", tmp);
    snprintf(txt, sizeof txt, "%s/calib.txt", tmp);
    sh("rm -f %s*; touch %s.tmp.999999 %s.tmp.%d", out, out, out, (int)getpid());
    expect(0, "", ANY_TIME, "%s --quiet calibrate --calib-samples 2 --calib-len 16 --batch-tokens 16 --model %s --calib %s --out %s",
           bin, model, txt, out);
    char p[1400];
    snprintf(p, sizeof p, "%s.tmp.999999", out);
    CHECK(!file_exists(p), "a dead writer's %s stayed", p);
    snprintf(p, sizeof p, "%s.tmp.%d", out, (int)getpid());
    CHECK(file_exists(p), "a live writer's %s was removed", p);
}

// Tokenizer: a pathological pre-tokenizer regex ends with an error naming the file and the
// pattern within a bound (it ran for minutes); Lowercase is Rust's full to_lowercase (U+0130).
static void test_tokenizer_rules(void) {
    char d[1300], p[1400], in[1400];
    snprintf(d, sizeof d, "%s/tokre", tmp);
    sh("rm -rf %s && mkdir -p %s && cp %s/tokenizer.json %s/", d, d, model, d);
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    edit_file(p, "\"pre_tokenizer\"", "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
              "\"pattern\": {\"Regex\": \"(?:(?:a|b)*(?:a|b)*c)|.\"}, \"behavior\": \"Isolated\", \"invert\": false}]}, \"old_pre\"");
    snprintf(in, sizeof in, "%s/ab.txt", tmp);
    FILE *f = fopen(in, "w");
    for (int i = 0; f && i < 1500; i++) fputs("ab", f);
    if (f) fclose(f);
    expect(1, "tokenizer.json: pre_tokenizer|regex '(?:(?:a|b)*(?:a|b)*c)|.'|CPU seconds|pathological pattern", ANY_TIME,
           "%s tokenize --tokenizer %s %s", bin, d, in);
    // Lowercase: "\u0130" must tokenize as "i\u0307" does (HF), not as "i"
    sh("rm -rf %s && mkdir -p %s && cp %s/tokenizer.json %s/", d, d, model, d);
    edit_file(p, "\"normalizer\"", "\"normalizer\": {\"type\": \"Lowercase\"}, \"old_norm\"");
    char a[1400], b[1400], c[1400];
    snprintf(a, sizeof a, "%s/dot_i.txt", tmp);
    snprintf(b, sizeof b, "%s/i_dot.txt", tmp);
    snprintf(c, sizeof c, "%s/i.txt", tmp);
    write_text(a, "\xc4\xb0", 2);
    write_text(b, "i\xcc\x87", 3);
    write_text(c, "i", 1);
    int rc = sh("%s --quiet tokenize --tokenizer %s --no-special --ids-only %s > %s/a.ids && %s --quiet tokenize --tokenizer %s --no-special "
                "--ids-only %s > %s/b.ids && %s --quiet tokenize --tokenizer %s --no-special --ids-only %s > %s/c.ids",
                bin, d, a, tmp, bin, d, b, tmp, bin, d, c, tmp);
    char *x = slurp("%s/a.ids", tmp), *y = slurp("%s/b.ids", tmp), *z = slurp("%s/c.ids", tmp);
    CHECK(rc == 0 && x && y && z && !strcmp(x, y) && strcmp(x, z), "Lowercase of U+0130: ids '%s', of i U+0307 '%s', of i '%s'",
          x ? x : "", y ? y : "", z ? z : "");
    free(x), free(y), free(z);
}

// Multiple-choice items with an empty, blank or repeated option are scored as lm-eval scores
// them and named in the report; a gold index outside the options is refused naming file:line.
static void test_odd_choices(void) {
    char f[1300], bad[1300];
    snprintf(f, sizeof f, "%s/arc_odd.jsonl", tmp);
    snprintf(bad, sizeof bad, "%s/arc_bad.jsonl", tmp);
    const char *rows =
        "{\"id\": \"a\", \"question\": {\"stem\": \"Q1?\", \"choices\": [{\"text\": \"x\", \"label\": \"A\"}, "
        "{\"text\": \"\", \"label\": \"B\"}]}, \"answerKey\": \"A\"}\n"
        "{\"id\": \"b\", \"question\": {\"stem\": \"Q2?\", \"choices\": [{\"text\": \"y\", \"label\": \"A\"}, "
        "{\"text\": \"y\", \"label\": \"B\"}]}, \"answerKey\": \"B\"}\n"
        "{\"id\": \"c\", \"question\": {\"stem\": \"Q3?\", \"choices\": [{\"text\": \"y\", \"label\": \"A\"}, "
        "{\"text\": \"z\", \"label\": \"B\"}]}, \"answerKey\": \"C\"}\n";
    write_text(bad, rows, strlen(rows));
    expect(1, "arc_bad.jsonl:3|answerKey 'C' is not one of the choice labels", BEFORE_WEIGHTS,
           "%s run --model %s --task arc_easy --task-file %s --attn bf16 --out %s/odd1", bin, model, bad, tmp);
    write_text(f, rows, strlen(rows) - 5); // the same rows with item c's answer A
    FILE *o = fopen(f, "a");
    if (o) fputs("\"A\"}\n", o), fclose(o);
    expect(0, "", ANY_TIME, "%s --quiet run --model %s --task arc_easy --task-file %s --attn bf16 --out %s/odd2", bin, model, f, tmp);
    char *rep = slurp("%s/odd2/report.md", tmp);
    CHECK(rep && strstr(rep, "Warning: task arc_easy has 2 items with an empty or repeated option (first: id 'a': option 1 is "
                        "empty)"), "report without the odd-option warning:\n%.600s", rep ? rep : "(none)");
    free(rep);
}

// ---- clear errors: each names the culprit and the fix ----
static void test_clear_errors(void) {
    char r[1300], colon[1300], smp[1500], f[1400];
    expect(2, "environment variable HIFA4_GEMM_ISA='bogus'|unknown ISA|unset it", BEFORE_WEIGHTS,
           "env HIFA4_GEMM_ISA=bogus %s run --model %s --task mc_jsonl --task-file %s --limit 2 --attn bf16 --out %s/isa", bin, model,
           mc, tmp);
    snprintf(f, sizeof f, "%s/answer.jsonl", tmp);
    const char *row = "{\"question\": \"Q?\", \"choices\": [\"a\", \"b\"], \"answer\": 0.9999999999999999}\n";
    write_text(f, row, strlen(row));
    expect(1, "answer.jsonl:1|field 'answer': expected an integer, got 0.9999999999999999 (not a whole number)", BEFORE_WEIGHTS,
           "%s run --model %s --task mc_jsonl --task-file %s --attn bf16 --out %s/ans", bin, model, f, tmp);
    // a complete run, then a copy whose directory name holds ':'
    snprintf(r, sizeof r, "%s/okrun", tmp);
    snprintf(colon, sizeof colon, "%s/run:2", tmp);
    expect(0, "", ANY_TIME, "%s --quiet run --model %s --task mc_jsonl --task-file %s --limit 4 --attn f32,bf16 --out %s", bin,
           model, mc, r);
    sh("rm -rf '%s' && cp -r %s '%s'", colon, r, colon);
    expect(0, "", ANY_TIME, "%s diff '%s' %s", bin, colon, r);
    expect(1, "run:9': |/run is no run directory|split at the last ':'", ANY_TIME, "%s diff '%s/run:9' %s", bin, tmp, r);
    // bytes appended to a samples file: named, with the fix; the fix works
    snprintf(smp, sizeof smp, "%s/samples-mc_jsonl-bf16.jsonl.zst", colon);
    sh("printf 'garbage\\n' >> '%s'", smp);
    expect(1, "samples-mc_jsonl-bf16.jsonl.zst: 8 bytes after its complete zstd frames|--resume does not repair it|truncate -s",
           ANY_TIME, "%s report '%s'", bin, colon);
    sh("truncate -s $(( $(stat -c %%s '%s') - 8 )) '%s'", smp, smp);
    expect(0, "", ANY_TIME, "%s report '%s'", bin, colon);
}

int main(void) {
    if (cli_begin("hostile3")) return test_summary("test_hostile3");
    snprintf(model, sizeof model, "%s/model", tmp);
    snprintf(mc, sizeof mc, "%s/mc20.jsonl", tmp);
    int rc = sh("%s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --tied 0 --out %s "
                ">/dev/null", bin, model);
    CHECK(rc == 0, "make-model");
    FILE *f = fopen(mc, "w");
    for (int i = 0; f && i < 20; i++)
        fprintf(f, "{\"question\": \"Question number %d?\", \"choices\": [\"yes\", \"no\", \"maybe\"], \"answer\": %d}\n", i, i % 3);
    if (f) fclose(f);
    TEST_PROGRESS("duplicate JSON keys");
    test_duplicate_keys();
    TEST_PROGRESS("stale safetensors index");
    test_stale_index();
    TEST_PROGRESS("hub snapshot");
    test_hub_snapshot();
    TEST_PROGRESS("HTML for JSON");
    test_html_json();
    TEST_PROGRESS("numbers that wrap");
    test_wrapping_numbers();
    TEST_PROGRESS("options that contradict");
    test_contradicting_options();
    TEST_PROGRESS("niah beyond the window");
    test_niah_window();
    TEST_PROGRESS("tokenizer: regex bound, lower-casing");
    test_tokenizer_rules();
    TEST_PROGRESS("odd multiple-choice options");
    test_odd_choices();
    TEST_PROGRESS("output path is an input");
    test_out_is_input();
    TEST_PROGRESS("make-model --force");
    test_make_model_force();
    TEST_PROGRESS("stale temporaries");
    test_stale_tmp();
    TEST_PROGRESS("clear errors");
    test_clear_errors();
    return test_summary("test_hostile3");
}
