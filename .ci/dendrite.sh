# shellcheck shell=bash
# Sourced by .ci/run after PostgreSQL is up: builds Dendrite (Apache-2.0, a
# Matrix homeserver; github.com/matrix-org/dendrite, never the AGPL fork)
# from the Go module proxy and starts it on 127.0.0.1 with a generated
# config and signing key, federation off, on a database of its own
# (tidemark_dendrite) in the CI PostgreSQL. Exports TIDEMARK_TEST_MATRIX_URL
# and TIDEMARK_TEST_MATRIX_SHARED_SECRET: tests register users of their own
# through the shared-secret registration endpoint. Idempotent: a second
# source reuses the running server; the binaries are cached under
# ${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}. Returns non-zero (never
# exits the caller) when it cannot.

# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tidemark_dendrite_setup() {
	local version=v0.13.8
	local cache="${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}"
	local bindir="$cache/dendrite-$version"
	local port="${TIDEMARK_CI_MATRIX_PORT:-7180}"
	local url="http://127.0.0.1:$port"
	local state="$cache/dendrite-run"
	# A database of its own per port, so a second server (another port) never
	# drops the first one's.
	local db="tidemark_dendrite${TIDEMARK_CI_MATRIX_PORT:+_$TIDEMARK_CI_MATRIX_PORT}"

	if [ ! -x "$bindir/dendrite" ] || [ ! -x "$bindir/generate-keys" ] || [ ! -x "$bindir/generate-config" ]; then
		echo "dendrite.sh: building dendrite $version (first run only)" >&2
		mkdir -p "$bindir" || return 1
		# CGO_ENABLED=0: its SQLite driver needs cgo, and it runs on
		# PostgreSQL here, so no C toolchain is needed.
		if ! CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$bindir" go install \
			"github.com/matrix-org/dendrite/cmd/dendrite@$version" \
			"github.com/matrix-org/dendrite/cmd/generate-keys@$version" \
			"github.com/matrix-org/dendrite/cmd/generate-config@$version" >&2; then
			echo "dendrite.sh: could not build dendrite $version" >&2
			return 1
		fi
	fi

	mkdir -p "$state" || return 1
	local pid
	pid="$(ci_recorded_pid "$state" "$bindir/dendrite")"
	if [ -z "$pid" ] || [ ! -f "$state/secret" ] || ! curl -sf -o /dev/null "$url/_matrix/client/versions"; then
		[ -n "$pid" ] && kill "$pid" 2>/dev/null && sleep 0.5
		# A fresh server each start: a new key, config and database, so
		# nothing left by an earlier server (signed with another key) is
		# read by this one.
		su postgres -c "PGOPTIONS=--client-min-messages=warning psql -qc 'DROP DATABASE IF EXISTS $db WITH (FORCE)'" >&2 || return 1
		su postgres -c "psql -qc 'CREATE DATABASE $db OWNER tidemark'" >&2 || return 1
		local root
		root="$(ci_fresh_root "$state" dendrite)" || return 1
		local secret
		secret="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
		(cd "$root" && "$bindir/generate-keys" --private-key matrix_key.pem >/dev/null) || return 1
		# -ci: rate limits off, in-memory JetStream.
		"$bindir/generate-config" -ci -server localhost -dir "$root" \
			-db "postgres://tidemark:tidemark@127.0.0.1:5432/$db?sslmode=disable" >"$root/dendrite.yaml" || return 1
		sed -i -e "s|private_key: matrix_key.pem|private_key: $root/matrix_key.pem|" \
			-e "s|disable_federation: false|disable_federation: true|" \
			-e "s|registration_shared_secret: .*|registration_shared_secret: \"$secret\"|" \
			-e "s|registration_disabled: false|registration_disabled: true|" \
			-e "s|max_open_conns: 90|max_open_conns: 20|" "$root/dendrite.yaml"
		# Every path in the generated config is absolute (-dir, and the
		# key above), so it runs from anywhere.
		nohup "$bindir/dendrite" --config "$root/dendrite.yaml" \
			--http-bind-address "127.0.0.1:$port" --https-bind-address "" \
			>"$state/log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$state/pid"
		echo "$secret" >"$state/secret"
		# Its first start on a fresh database creates its schema: allow a
		# minute and a half on a busy machine. The server answering must be
		# this one, or its secret is not ours.
		ci_wait_for "dendrite.sh: dendrite" "$url/_matrix/client/versions" "$pid" "$state/log" 900 || return 1
	fi

	export TIDEMARK_TEST_MATRIX_URL="$url"
	TIDEMARK_TEST_MATRIX_SHARED_SECRET="$(cat "$state/secret")"
	export TIDEMARK_TEST_MATRIX_SHARED_SECRET
	echo "dendrite.sh: dendrite $version on $url (pid $pid)" >&2
}

tidemark_dendrite_setup
