#!/bin/sh
# libegress.a exports its API and nothing else: the global symbols it defines are exactly
# the functions broker/egress.h declares (no fd4_*, egress_reason_*, egress_fdpass_*, which
# are its private parts), and a consumer built as egress.pc says, that names its own
# functions like those parts, links and gets libegress's behaviour, not its own.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
LIB=$top_builddir/broker/libegress.a
HDR=$top_srcdir/broker/egress.h
PC=$top_builddir/egress.pc
cd "$WORK" || exit 1
[ -r "$LIB" ] || { echo "not ok - $LIB is not built"; exit 1; }

# The functions egress.h declares (not its comments): "type name(" at a line's start.
api=$(grep -v '^ \*' "$HDR" | grep -o '^[a-z].*[ *]egress_[a-z0-9_]*(' |
    sed 's/.*[ *]\(egress_[a-z0-9_]*\)($/\1/' | sort -u)
expect_match "egress.h declares egress_fd4_connect" '^egress_fd4_connect$' "$api"
globals=$(nm -g --defined-only "$LIB" | awk 'NF == 3 { print $3 }' | sort -u)
expect_eq "no global symbol without the egress_ prefix" "" \
    "$(printf '%s\n' "$globals" | grep -v '^egress_' | tr '\n' ' ')"
expect_eq "the global symbols are exactly egress.h's functions" \
    "$(printf '%s\n' "$api" | tr '\n' ' ')" "$(printf '%s\n' "$globals" | tr '\n' ' ')"

# A consumer as installed: $prefix/include/egress/egress.h, $prefix/lib/libegress.a and
# egress.pc with prefix moved there.
mkdir -p prefix/include/egress prefix/lib/pkgconfig
cp "$HDR" prefix/include/egress/ && cp "$LIB" prefix/lib/ &&
    sed "s|^prefix=.*|prefix=$WORK/prefix|" "$PC" >prefix/lib/pkgconfig/egress.pc || exit 1
cat >consumer.c <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <egress/egress.h>

/* Names of libegress's parts: the consumer's own, which libegress must not use or clash with. */
const char *egress_reason_name(int r);
int fd4_request_build(void);
int egress_fdpass_send(void);

const char *
egress_reason_name(int r)
{
	(void)r;
	return "the consumer's";
}

int
fd4_request_build(void)
{
	return 42;
}

int
egress_fdpass_send(void)
{
	return 43;
}

int
main(void)
{
	int rc;

	errno = 0;
	rc = egress_fd4_connect(-1, "example.test", 443, 0);
	printf("%s %d %d %s %d %d\n", egress_strerror(EGRESS_ERR_NOT_ALLOWLISTED), rc,
	    errno == EINVAL, egress_strerror(rc), fd4_request_build(), egress_fdpass_send());
	return 0;
}
EOF
export PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig"
if ! command -v pkg-config >/dev/null 2>&1; then
	echo "ok - a consumer built with pkg-config # SKIP pkg-config is not installed"
	finish || exit 1
	exit 77
fi
# shellcheck disable=SC2046,SC2086 # pkg-config's and the build's flags are words
if ${EGRESS_TEST_CC:-cc} $(pkg-config --cflags egress) -o consumer consumer.c \
    ${EGRESS_TEST_LDFLAGS:-} $(pkg-config --static --libs egress) 2>link.err; then
	ok "a consumer defining fd4_request_build, egress_reason_name, egress_fdpass_send links"
	expect_eq "libegress answers with its own parts, the consumer's with its own" \
	    "not-allowlisted -1003 1 malformed-request 42 43" "$(./consumer)"
else
	not_ok "a consumer defining fd4_request_build, egress_reason_name, egress_fdpass_send links"
	sed 's/^/  /' link.err | head -20
fi
finish
