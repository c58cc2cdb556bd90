// ppl.c: text for perplexity (spec/tasks.md section 2). Loads the text only: joining several
// documents with "\n\n" and cutting non-overlapping --ppl-ctx token windows are eval.c's job
// (they need the tokenizer). With --task-file any UTF-8 text file is loaded byte for byte.
// Default: WikiText-2 test raw. The copy in the data root (wikitext2/raw/wiki.test.raw) has CRLF
// line ends and lacks the original's 1,467 blank " " lines (datasets/wikitext2/SOURCE.md); when
// wikitext2/tokens/test.txt is also present the original LF file (1,290,590 bytes) is rebuilt
// the way SOURCE.md describes: walk the tokens file, emit " \n" for each blank " " line and
// the next raw line (CRLF -> LF) for every other line. Without it, CRs are dropped.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

// A text file read into memory: its path (for messages) and its bytes.
struct text_file {
    const char *path;
    const char *text;
    size_t len;
};

// Rebuilds the original wiki.test.raw (see header); ERR_FORMAT if the files do not line up.
static int rebuild(struct sbuf *out, struct text_file raw, struct text_file tok, struct err *e) {
    const char *r = raw.text, *rend = raw.text + raw.len, *t = tok.text, *tend = tok.text + tok.len;
    const char *raw_path = raw.path, *tok_path = tok.path;
    int tline = 0, rline = 0;
    while (t < tend) {
        size_t tl = task_line_len(t, tend);
        const char *tnl = memchr(t, '\n', (size_t)(tend - t));
        tline++;
        int blank = 1;
        for (size_t k = 0; k < tl; k++) blank &= t[k] == ' ';
        t = tnl ? tnl + 1 : tend;
        if (blank) {
            if (sb_puts(out, " \n")) return err_set(e, ERR_NOMEM, "ppl: out of memory");
            continue;
        }
        if (r >= rend)
            return err_set(e, ERR_FORMAT, "%s: ran out of lines at %s:%d (the files do not line up)", raw_path, tok_path, tline);
        size_t rl = task_line_len(r, rend);
        const char *rnl = memchr(r, '\n', (size_t)(rend - r));
        rline++;
        if (sb_putn(out, r, rl) || sb_puts(out, "\n")) return err_set(e, ERR_NOMEM, "ppl: out of memory");
        r = rnl ? rnl + 1 : rend;
    }
    if (r < rend) return err_set(e, ERR_FORMAT, "%s:%d: more lines than %s has non-blank lines", raw_path, rline + 1, tok_path);
    return 0;
}

int task_load_ppl(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "ppl", 0, "text-v1", o);
    s->is_ppl = 1;
    char path[4096], tpath[4096];
    int rc;
    if (o->file) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "ppl: --task-file %s: no such file", o->file);
        if ((rc = task_read_text(o->file, &s->text, &s->text_len, e))) return rc;
        task_source_add(s, "%s (plain text, as is)", o->file);
        return 0;
    }
    if ((rc = task_data_find(path, sizeof path, o, "ppl", "wikitext2/raw/wiki.test.raw", 0, e))) return rc;
    char *raw = NULL;
    size_t raw_len = 0;
    if ((rc = task_read_text(path, &raw, &raw_len, e))) return rc;
    struct sbuf out = {0};
    if (task_data_try(tpath, sizeof tpath, o, "wikitext2/tokens/test.txt", 0)) {
        char *tok = NULL;
        size_t tok_len = 0;
        rc = task_read_text(tpath, &tok, &tok_len, e);
        if (!rc) rc = rebuild(&out, (struct text_file){path, raw, raw_len}, (struct text_file){tpath, tok, tok_len}, e);
        free(tok);
        if (!rc) task_source_add(s, "%s + %s (WikiText-2 test raw, original LF file rebuilt with its blank lines)", path, tpath);
    } else {
        for (size_t i = 0; i < raw_len && !rc; i++)
            if (raw[i] != '\r' && sb_putn(&out, raw + i, 1)) rc = err_set(e, ERR_NOMEM, "ppl: out of memory");
        if (!rc) task_source_add(s, "%s (WikiText-2 test raw, CRs dropped; blank lines missing: wikitext2/tokens/test.txt not found)", path);
    }
    free(raw);
    if (rc) { free(out.p); return rc; }
    s->text_len = out.n;
    s->text = sb_take(&out);
    if (!s->text) return err_set(e, ERR_NOMEM, "ppl: out of memory");
    return 0;
}
