# shellcheck shell=bash
# Sourced by the .ci/*.sh scripts that keep a test server running between
# CI runs (s3.sh, mailpit.sh, dendrite.sh): what they all do the same way.

# ci_recorded_pid STATE BIN prints the pid recorded in STATE/pid while it is
# still a process of BIN (pids are reused across reboots and sessions), and
# nothing otherwise.
ci_recorded_pid() {
	local pid=""
	[ -f "$1/pid" ] && pid="$(cat "$1/pid")"
	if [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "$2"; then
		echo "$pid"
	fi
}

# ci_fresh_root STATE NAME makes a new temporary directory for a server,
# removes the one the last server of STATE had, and prints the new one.
ci_fresh_root() {
	[ -f "$1/root" ] && rm -rf "$(cat "$1/root")"
	local root
	root="$(mktemp -d "${TMPDIR:-/tmp}/tidemark-$2.XXXXXX")" || return 1
	echo "$root" >"$1/root"
	echo "$root"
}

# ci_answers URL [any] succeeds when URL answers 2xx (with "any": answers
# at all, for a server that refuses what is not signed).
ci_answers() {
	if [ "${2:-}" = any ]; then
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" != 000 ]
	else
		curl -sf -o /dev/null "$1"
	fi
}

# ci_wait_for NAME URL PID LOG TRIES [any] waits (TRIES tenths of a second
# at most) until URL answers (see ci_answers), while PID, the server just
# started, lives; it fails saying why, with the end of LOG, when the server
# exits or never answers.
ci_wait_for() {
	local name="$1" url="$2" pid="$3" log="$4" tries="$5" any="${6:-}" i
	for i in $(seq 1 "$tries"); do
		ci_answers "$url" "$any" && break
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$name exited:" >&2
			tail -n 30 "$log" >&2
			return 1
		fi
		sleep 0.1
	done
	# The server answering must be the one just started (another one on
	# the port would make this one exit).
	if ! ci_answers "$url" "$any" || ! kill -0 "$pid" 2>/dev/null; then
		echo "$name did not answer on $url:" >&2
		tail -n 5 "$log" >&2
		return 1
	fi
}
