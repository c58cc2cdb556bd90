# layers_flags.awk (tests/test_layers.sh): prints "file function line" for every call, in the
# files given, of a function declared or defined in them (a line starting at column 0 with
# "type name(") that passes two or more arguments which are the bare literal 0 or 1, e.g.
# f(x, 1, 0): such a call says nothing about what the 0 and the 1 mean (use a named enum or a
# second function). Comments, string and character literals are blanked first; arguments
# are split at parenthesis depth 1. What it cannot see: a single bare flag (f(x, 1)), flags
# passed as true/false or through a variable, and a 0/1 that is a count or an index (those
# calls are listed in tests/layers_flags_allow.txt).
FNR == 1 { nfile++; file[nfile] = FILENAME; text[nfile] = "" }
{
    line = $0
    if (line ~ /^[A-Za-z_][^=;(#]*[ *]([A-Za-z_][A-Za-z_0-9]*)\(/ && line !~ /^(typedef|return|else|struct [A-Za-z_]+ *\{)/) {
        s = line; sub(/\(.*/, "", s); sub(/.*[ *]/, "", s)
        if (s != "") declared[s] = 1
    }
    text[nfile] = text[nfile] line "\n"
}
function blank(s,    out, i, c, n, st) {
    # st: 0 code, 1 // comment, 2 /* comment */, 3 "string", 4 'char'
    out = ""; st = 0; n = length(s)
    for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        if (st == 0) {
            if (c == "/" && substr(s, i + 1, 1) == "/") { st = 1; out = out " "; continue }
            if (c == "/" && substr(s, i + 1, 1) == "*") { st = 2; out = out " "; continue }
            if (c == "\"") { st = 3; out = out "\""; continue }
            if (c == "'") { st = 4; out = out "'"; continue }
            out = out c
        } else if (st == 1) {
            if (c == "\n") { st = 0; out = out c } else out = out " "
        } else if (st == 2) {
            if (c == "*" && substr(s, i + 1, 1) == "/") { st = 0; i++; out = out "  "; continue }
            out = out (c == "\n" ? c : " ")
        } else {
            if (c == "\\") { out = out "  "; i++; continue }
            if ((st == 3 && c == "\"") || (st == 4 && c == "'")) { st = 0; out = out c; continue }
            out = out (c == "\n" ? c : " ")
        }
    }
    return out
}
END {
    for (k = 1; k <= nfile; k++) {
        s = blank(text[k]); n = length(s); ln = 1
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            if (c == "\n") { ln++; continue }
            if (c != "(") continue
            # the identifier just before "("
            j = i - 1
            while (j >= 1 && substr(s, j, 1) ~ /[A-Za-z_0-9]/) j--
            name = substr(s, j + 1, i - j - 1)
            if (name == "" || !(name in declared)) continue
            d = 0; arg = ""; lits = 0
            for (m = i; m <= n; m++) {
                ch = substr(s, m, 1)
                if (ch == "(" || ch == "[" || ch == "{") { d++; if (d == 1) continue }
                if (ch == ")" || ch == "]" || ch == "}") d--
                if ((d == 1 && ch == ",") || d == 0) {
                    gsub(/[ \t\n]/, "", arg)
                    if (arg == "0" || arg == "1") lits++
                    arg = ""
                    if (d == 0) break
                    continue
                }
                arg = arg ch
            }
            if (lits >= 2) printf "%s %s %d\n", file[k], name, ln
        }
    }
}
