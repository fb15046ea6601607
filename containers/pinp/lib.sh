# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Helpers of scripts/build-pinp-image and scripts/test-podman5 about the pinp image. Sourced,
# never run. The general ones (say, die, api, api_ping, uri_encode…) are scripts/lib.sh's.
#
# Everything that talks to Podman goes through its libpod REST API with curl, never the podman
# binary: the outer service (Podman 4.3 here) and the inner one (Podman 5.4 in the pinp container).

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
# Progress lines on stderr (stdout carries results); image imports and saves take long.
AGS_SAY_FD=2
AGS_API_TIMEOUT=600
# The Debian suite the image is built from (trixie: Podman 5.4; sid: 5.8; experimental: 6.x on
# top of sid) and its image: localhost/ags-pinp:latest for trixie, localhost/ags-pinp:SUITE else.
# pinp_suite SUITE changes both.
PINP_SUITE=${AGS_PINP_SUITE:-trixie}
pinp_suite() {
    case $1 in
        trixie | sid | experimental) ;;
        *) die "unknown suite '$1': one of trixie (Podman 5.4), sid (5.8), experimental (6.x)" ;;
    esac
    PINP_SUITE=$1
    export AGS_PINP_SUITE=$1
    if [ -z "${AGS_PINP_IMAGE:-}" ]; then
        if [ "$1" = trixie ]; then PINP_IMAGE=localhost/ags-pinp:latest; else PINP_IMAGE=localhost/ags-pinp:$1; fi
    fi
}
PINP_IMAGE=${AGS_PINP_IMAGE:-localhost/ags-pinp:latest}
pinp_suite "$PINP_SUITE"
# The label that records which recipe an image was built from (see pinp_recipe).
PINP_RECIPE_LABEL=io.ags.pinp.recipe
PINP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PINP_DIR=$PINP_REPO/containers/pinp

# outer_socket: the outer (host) service's socket: $AGS_PINP_OUTER_SOCKET, else root's.
outer_socket() {
    printf '%s\n' "${AGS_PINP_OUTER_SOCKET:-/run/podman/podman.sock}"
}

# image_id SOCKET REF: the image's id, or nothing when SOCKET's service does not have it.
image_id() {
    local ref
    ref=$(uri_encode "$2")
    { curl -sf --max-time 30 --unix-socket "$1" "http://d$AGS_API_PREFIX/images/$ref/json" 2>/dev/null ||
        true; } | jq -r '.Id // empty'
}

# image_label SOCKET REF KEY: the value of label KEY of image REF (nothing when absent).
image_label() {
    local ref
    ref=$(uri_encode "$2")
    { curl -sf --max-time 30 --unix-socket "$1" "http://d$AGS_API_PREFIX/images/$ref/json" 2>/dev/null ||
        true; } | jq -r --arg k "$3" '(.Labels // .Config.Labels // {})[$k] // empty'
}

# import_tar SOCKET TAR REF CHANGE...: POST /images/import of a rootfs tar, tagged REF, with
# Dockerfile-style CHANGEs (CMD, ENV, LABEL...). Prints the new image id.
import_tar() {
    local sock=$1 tar=$2 ref=$3 query change
    shift 3
    query="reference=$(uri_encode "$ref")"
    for change in "$@"; do
        query+="&changes=$(uri_encode "$change")"
    done
    api "$sock" POST "/images/import?$query" -H 'Content-Type: application/x-tar' \
        --data-binary "@$tar" | jq -r '(.Id // .id // "") | ltrimstr("sha256:")'
}

# pinp_recipe: a hash of everything the pinp image is built from (build-rootfs, packages and
# rootfs/ of containers/pinp, and the image changes), recorded in the image's PINP_RECIPE_LABEL.
# A changed recipe means a rebuild. Debian trixie itself moves on: `build-pinp-image --force`
# picks up new packages.
pinp_recipe() {
    (
        cd "$PINP_DIR" || exit 1
        find build-rootfs packages rootfs -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
        stat -c '%a %n' rootfs/usr/local/bin/ags-pinp-init build-rootfs
        printf '%s\n' "${PINP_CHANGES[@]}"
        printf 'suite %s\n' "$PINP_SUITE"
    ) | sha256sum | cut -c1-64
}

# The image config set at import (no Containerfile: the image comes from a rootfs tar).
PINP_CHANGES=(
    'CMD ["/usr/local/bin/ags-pinp-init"]'
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'STOPSIGNAL SIGTERM'
)
