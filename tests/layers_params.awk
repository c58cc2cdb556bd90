# layers_params.awk (tests/test_layers.sh): prints "file function count" for every top-level
# function definition (.c and .h) with more than 7 parameters, counted at parenthesis depth 1
# (a function-pointer parameter counts once; "(void)" counts none).
FNR == 1 { acc = ""; on = 0 }
!on && /^[A-Za-z_][^=;]*\(/ && !/^(typedef|enum|#)/ && !/^struct [A-Za-z_]+ *\{/ && !/;[[:space:]]*$/ { on = 1; acc = ""; start = FNR }
on {
    acc = acc " " $0
    if ($0 ~ /\{/ || $0 ~ /;[[:space:]]*$/) {
        if ($0 ~ /\{/) {
            s = acc; d = 0; n = 0; seen = 0; empty = 1; name = ""
            i0 = index(s, "("); name = substr(s, 1, i0 - 1); sub(/.*[ *]/, "", name)
            for (i = i0; i <= length(s); i++) {
                ch = substr(s, i, 1)
                if (ch == "(") { d++; if (d == 1) continue }
                if (ch == ")") { d--; if (d == 0) break }
                if (d == 1 && ch == ",") n++
                if (d >= 1 && ch !~ /[ \t]/) empty = 0
            }
            np = empty ? 0 : n + 1
            if (substr(s, i0) ~ /^\([ \t]*void[ \t]*\)/) np = 0
            if (np > 7) printf "%s %s %d\n", FILENAME, name, np
        }
        on = 0
    }
}
