# shellcheck shell=bash
# The helpers shared by the scripts (setup-podman, test, quickstart, bench-*, test-fresh, and
# through containers/pinp/lib.sh build-pinp-image and test-podman5). Sourced, never run.
#
# Everything that talks to Podman goes through its REST API with curl (the ags way); the podman CLI
# is used only by setup-podman's probes and verification.

# The libpod API prefix: /v4.0.0/libpod routes answer on Podman 4 and 5.
AGS_API_PREFIX=/v4.0.0/libpod
# PATH for processes started with a clean environment (as another user, or services).
AGS_CLEAN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# complete_path: append the standard directories missing from PATH. Podman and netavark run
# helpers from /usr/sbin (iptables…), and the services started here inherit this PATH.
complete_path() {
    local dir
    for dir in ${AGS_CLEAN_PATH//:/ }; do
        case ":$PATH:" in
            *":$dir:"*) ;;
            *) PATH=$PATH:$dir ;;
        esac
    done
    export PATH
}

# say STEP MESSAGE...: one progress line, prefixed with the script's name and the step, on stdout
# (on stderr when AGS_SAY_FD=2).
say() {
    local step=$1
    shift
    printf '%s: %-10s %s\n' "${0##*/}" "$step:" "$*" >&"${AGS_SAY_FD:-1}"
}

# warn MESSAGE...: a warning on stderr.
warn() {
    printf '%s: WARNING: %s\n' "${0##*/}" "$*" >&2
}

# die MESSAGE...: print an error on stderr and exit 1.
die() {
    printf '%s: ERROR: %s\n' "${0##*/}" "$*" >&2
    exit 1
}

# socket_of URL: the socket path of a unix:// URL (a bare path is returned as is).
socket_of() {
    printf '%s\n' "${1#unix://}"
}

# api_ping SOCKET: whether a Podman service answers on SOCKET.
api_ping() {
    [ -S "$1" ] && curl -sf --max-time 5 --unix-socket "$1" "http://d$AGS_API_PREFIX/_ping" >/dev/null 2>&1
}

# api SOCKET METHOD PATH [CURL-ARGS...]: one libpod request (at most AGS_API_TIMEOUT seconds,
# default 300); prints the body, fails on HTTP >= 400 (the error body is printed on stderr then).
api() {
    local sock=$1 method=$2 path=$3 out status
    shift 3
    out=$(curl -sS --max-time "${AGS_API_TIMEOUT:-300}" --unix-socket "$sock" -X "$method" -w '\n%{http_code}' "$@" \
        "http://d$AGS_API_PREFIX$path") || return 1
    status=${out##*$'\n'}
    out=${out%$'\n'*}
    if [ "$status" -ge 400 ]; then
        printf '%s %s -> HTTP %s: %s\n' "$method" "$path" "$status" "$out" >&2
        return 1
    fi
    printf '%s\n' "$out"
}

# uri_encode STRING: STRING percent-encoded for a query parameter.
uri_encode() {
    jq -rn --arg v "$1" '$v | @uri'
}

# list_labelled SOCKET LABEL: one line per container and volume carrying LABEL ("key" or
# "key=value"): "container NAME ID CREATED LABELS-JSON" / "volume NAME - CREATED LABELS-JSON".
list_labelled() {
    local sock=$1 filter
    filter=$(uri_encode "{\"label\":[\"$2\"]}")
    api "$sock" GET "/containers/json?all=true&filters=$filter" |
        jq -r '.[] | "container \(.Names[0]) \(.Id[0:12]) \(.Created) \(.Labels // {} | tojson)"'
    api "$sock" GET "/volumes/json?filters=$filter" |
        jq -r '.[] | "volume \(.Name) - \(.CreatedAt) \(.Labels // {} | tojson)"'
}

# user_home USER: the home directory of USER from the passwd database.
user_home() {
    getent passwd "$1" | cut -d: -f6
}

# as_user USER COMMAND...: run COMMAND as USER (uid, gid and groups) from / with a clean
# environment that points XDG_RUNTIME_DIR at /run/user/UID. Runs COMMAND directly when USER is the
# current user.
as_user() {
    local user=$1 uid gid home
    shift
    uid=$(id -u "$user")
    if [ "$uid" = "$(id -u)" ]; then
        "$@"
        return
    fi
    gid=$(id -g "$user")
    home=$(user_home "$user")
    (cd / && setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
        env -i HOME="$home" USER="$user" LOGNAME="$user" PATH="$AGS_CLEAN_PATH" LANG=C.UTF-8 \
        XDG_RUNTIME_DIR="/run/user/$uid" "$@")
}

# load_cargo: make cargo and rustup reachable when the script runs under a clean environment. The
# toolchain is the one thing the scripts do not install: a machine needs rustup's (README).
load_cargo() {
    command -v cargo >/dev/null 2>&1 && return 0
    local home=${HOME:-$(user_home "$(id -un)")}
    local env_file=${CARGO_HOME:-$home/.cargo}/env
    # shellcheck source=/dev/null
    [ -f "$env_file" ] && . "$env_file"
    command -v cargo >/dev/null 2>&1 || die "cargo not found (looked on PATH and in $env_file):" \
        "install a Rust toolchain with rustup (the stable channel: see rust-toolchain.toml);" \
        "Debian 12's cargo package is too old for this crate (Rust 2024)"
}

# install_missing PACKAGE...: install the Debian packages among PACKAGE that are not installed, as
# root or through sudo. For a script's own tools beyond scripts/setup-podman's PACKAGES
# (tests/offline/script_tools.rs checks that every command a script calls is installed by someone).
install_missing() {
    local missing=() p
    for p in "$@"; do
        if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
            missing+=("$p")
        fi
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "${missing[*]} missing and not root (apt-get install ${missing[*]})"
        sudo=(sudo)
    fi
    say packages "installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300 update </dev/null ||
        die "apt-get update failed"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=300 \
        install "${missing[@]}" </dev/null >/dev/null || die "could not install ${missing[*]}"
}

# copy_image FROM-SOCKET TO-SOCKET REF: stream image REF from one Podman service into another
# (`GET /images/{name}/get` piped into `POST /images/load`, never on disk in between), unless the
# target already has it with the same id (a copy keeps the id). The target's earlier image of
# that name is then removed when the copy left it without a name, best effort (a container may
# still use it); one that still carries another name stays.
copy_image() {
    local from=$1 to=$2 ref=$3 path want have
    path="/images/$(uri_encode "$ref")"
    want=$(api "$from" GET "$path/json" | jq -r .Id) || return 1
    have=$(api "$to" GET "$path/json" 2>/dev/null | jq -r .Id) || have=""
    [ "$want" = "$have" ] && return 0
    curl -sS --fail --max-time 1200 --unix-socket "$from" "http://d$AGS_API_PREFIX$path/get?compress=false" |
        curl -sS --fail --max-time 1200 --unix-socket "$to" -X POST -T - \
            -H 'Content-Type: application/x-tar' "http://d$AGS_API_PREFIX/images/load" >/dev/null || return 1
    [ "$(api "$to" GET "$path/json" | jq -r .Id)" = "$want" ] || return 1
    if [ -n "$have" ] && [ "$(api "$to" GET "/images/$have/json" 2>/dev/null | jq '.RepoTags // [] | length')" = 0 ]; then
        api "$to" DELETE "/images/$have" >/dev/null 2>&1 || true
    fi
}
