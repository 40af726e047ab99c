# shellcheck shell=bash
# Sourced by .ci/run: builds mailpit (MIT, an SMTP server that keeps what it
# takes and shows it through a JSON API) from the Go module proxy, starts it
# on 127.0.0.1 with a database in a temporary directory and exports
# TIDEMARK_TEST_SMTP_ADDR (host:port of its SMTP server) and
# TIDEMARK_TEST_MAILPIT_API (base URL of its HTTP API). Idempotent: a second
# source reuses the running server; the binary is cached under
# ${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}. Returns non-zero (never
# exits the caller) when it cannot.

# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tidemark_mailpit_setup() {
	local version=v1.33.1
	local cache="${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}"
	local bindir="$cache/mailpit-$version"
	local bin="$bindir/mailpit"
	local smtp_port="${TIDEMARK_CI_SMTP_PORT:-7125}"
	local http_port="${TIDEMARK_CI_MAILPIT_PORT:-7126}"
	local api="http://127.0.0.1:$http_port"
	local state="$cache/mailpit-run"

	if [ ! -x "$bin" ]; then
		echo "mailpit.sh: building mailpit $version (first run only)" >&2
		mkdir -p "$bindir" || return 1
		if ! GOFLAGS=-mod=mod GOBIN="$bindir" go install "github.com/axllent/mailpit@$version" >&2; then
			echo "mailpit.sh: could not build mailpit $version" >&2
			return 1
		fi
	fi

	mkdir -p "$state" || return 1
	local pid
	pid="$(ci_recorded_pid "$state" "$bin")"
	if [ -z "$pid" ] || ! curl -sf -o /dev/null "$api/api/v1/info"; then
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
		local root
		root="$(ci_fresh_root "$state" mailpit)" || return 1
		# --max 0 keeps every message: tests find theirs by a sender of
		# their own, so nothing may be pruned under them. Mails with the
		# same Message-ID are all kept (no --ignore-duplicate-ids): a mail
		# sent twice must show twice, or the tests could not see it.
		nohup "$bin" --smtp "127.0.0.1:$smtp_port" --listen "127.0.0.1:$http_port" \
			--database "$root/mailpit.db" --max 0 --disable-version-check --smtp-disable-rdns \
			--smtp-auth-accept-any --smtp-auth-allow-insecure --quiet \
			>"$state/log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$state/pid"
		ci_wait_for "mailpit.sh: mailpit" "$api/api/v1/info" "$pid" "$state/log" 300 || return 1
	fi

	export TIDEMARK_TEST_SMTP_ADDR="127.0.0.1:$smtp_port"
	export TIDEMARK_TEST_MAILPIT_API="$api"
	echo "mailpit.sh: mailpit $version, SMTP on $TIDEMARK_TEST_SMTP_ADDR, API on $api (pid $pid)" >&2
}

tidemark_mailpit_setup
