// --subjects: keep only some subjects of a grouped task (mmlu subjects, bbh subtasks, exam pools,
// mc_jsonl rows' subjects). Contract in eval/tasks/task.h.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

int task_subject_listed(const char *subjects, const char *subject) {
    if (!subjects || !subject) return 0;
    const size_t n = strlen(subject);
    for (const char *p = subjects; *p;) {
        const char *c = strchr(p, ',');
        const size_t k = c ? (size_t)(c - p) : strlen(p);
        if (k == n && !strncmp(p, subject, n)) return 1;
        p += k + (c != NULL);
    }
    return 0;
}

static int listed(const struct task_item *it, const void *subjects) { return task_subject_listed(subjects, it->subject); }

int task_has_subject(const struct task_set *s, const char *subject) {
    for (int i = 0; i < s->n_items; i++)
        if (s->items[i].subject && !strcmp(s->items[i].subject, subject)) return 1;
    return 0;
}

// "a, b, c, ... (N)": the distinct subjects in item order (items are grouped by subject)
void task_subject_list(char *out, size_t n, const struct task_set *s) {
    size_t k = 0;
    int shown = 0, distinct = 0;
    out[0] = 0;
    for (int i = 0; i < s->n_items; i++) {
        const char *a = s->items[i].subject;
        if (!a || (i && s->items[i - 1].subject && !strcmp(a, s->items[i - 1].subject))) continue;
        distinct++;
        if (shown < 8 && k + strlen(a) + 8 < n) k += (size_t)snprintf(out + k, n - k, "%s%s", shown++ ? ", " : "", a);
    }
    if (distinct > shown && k + 24 < n) snprintf(out + k, n - k, ", ... (%d in all)", distinct);
}

int task_keep_subjects(struct task_set *s, const char *subjects, struct err *e) {
    if (!subjects) return 0;
    // an empty element would silently match nothing (a list with an empty element is an error)
    for (const char *p = subjects;; p++) {
        const char *c = strchr(p, ',');
        if ((c ? c : p + strlen(p)) == p) return err_set(e, ERR_USAGE, "--subjects '%s': an empty element (stray comma?)", subjects);
        if (!c) break;
        p = c;
    }
    if (s->is_ppl) return 0;
    int has = 0, kept = 0;
    for (int i = 0; i < s->n_items && !has; i++) has = s->items[i].subject != NULL;
    if (!has) return 0; // a task without subjects is left whole
    for (int i = 0; i < s->n_items; i++)
        if (task_subject_listed(subjects, s->items[i].subject)) kept++;
    if (!kept) {
        char list[512];
        task_subject_list(list, sizeof list, s);
        return err_set(e, ERR_NOTFOUND, "task %s: --subjects '%s' names none of its subjects (%s)", s->name, subjects, list);
    }
    task_keep_if(s, listed, subjects);
    return 0;
}
