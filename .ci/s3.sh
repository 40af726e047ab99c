# shellcheck shell=bash
# Sourced by .ci/run: builds versitygw (Apache-2.0, an S3-compatible gateway
# that honours If-Match / If-None-Match) from the Go module proxy, starts it
# on 127.0.0.1 with a posix backend in a temporary directory, creates the
# test bucket and exports TIDEMARK_TEST_S3_*. Idempotent: a second source
# reuses the running server; the binary is cached under
# ${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}, so later runs start in a
# second. Returns non-zero (never exits the caller) when it cannot.

# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tidemark_s3_setup() {
	local version=v1.8.0
	local cache="${TIDEMARK_CI_CACHE:-$HOME/.cache/tidemark-ci}"
	local bindir="$cache/versitygw-$version"
	local bin="$bindir/versitygw"
	local port="${TIDEMARK_CI_S3_PORT:-7170}"
	local endpoint="http://127.0.0.1:$port"
	local access=tidemark secret=tidemark-secret bucket=tidemark-test
	local state="$cache/versitygw-run"

	if [ ! -x "$bin" ]; then
		echo "s3.sh: building versitygw $version (first run only)" >&2
		mkdir -p "$bindir" || return 1
		if ! GOFLAGS=-mod=mod GOBIN="$bindir" go install "github.com/versity/versitygw/cmd/versitygw@$version" >&2; then
			echo "s3.sh: could not build versitygw $version" >&2
			return 1
		fi
	fi

	mkdir -p "$state" || return 1
	local pid
	pid="$(ci_recorded_pid "$state" "$bin")"
	if [ -z "$pid" ] || ! ci_answers "$endpoint/" any; then
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
		local root
		root="$(ci_fresh_root "$state" s3)" || return 1
		mkdir -p "$root/data" "$root/meta"
		# --sidecar keeps metadata in files, so the backend does not depend
		# on the filesystem's extended attributes.
		ROOT_ACCESS_KEY="$access" ROOT_SECRET_KEY="$secret" \
			nohup "$bin" --port "127.0.0.1:$port" --quiet posix --sidecar "$root/meta" "$root/data" \
			>"$state/log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$state/pid"
		# Unsigned requests are refused (403): it is up when it answers.
		ci_wait_for "s3.sh: versitygw" "$endpoint/" "$pid" "$state/log" 100 any || return 1
	fi

	# Create the bucket (a second PUT answers 409, which is fine).
	local code
	code="$(curl -s -o /dev/null -w '%{http_code}' -X PUT --user "$access:$secret" \
		--aws-sigv4 "aws:amz:us-east-1:s3" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$endpoint/$bucket")"
	case "$code" in
	200 | 409) ;;
	*)
		echo "s3.sh: create bucket $bucket: HTTP $code" >&2
		return 1
		;;
	esac

	export TIDEMARK_TEST_S3_ENDPOINT="$endpoint"
	export TIDEMARK_TEST_S3_ACCESS_KEY="$access"
	export TIDEMARK_TEST_S3_SECRET_KEY="$secret"
	export TIDEMARK_TEST_S3_BUCKET="$bucket"
	echo "s3.sh: versitygw $version on $endpoint (pid $pid), bucket $bucket" >&2
}

tidemark_s3_setup
