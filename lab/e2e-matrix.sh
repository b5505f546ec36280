#!/usr/bin/env bash
# The end-to-end suite once per Argo CD version given (make e2e passes
# E2E_ARGOCD, "2.14 3.6" by default), then the Gitea suites: relcap's Gitea
# forge against the real server, and a lab whose Argo CD follows Gitea, once
# per version.
#
# Every lab is built first, the builds beside one another: the first
# version's at normal priority, the others and Gitea's at the lowest (a warm
# cache answers each at once). Then all the suites run side by side, each
# against a lab of its own (ports picked free, directories of their own):
# they mostly wait on Argo CD, kwok and relcap's own grace periods, so two
# together take little longer than one (docs/PERFORMANCE.md, "The suite and
# CI"). RELCAP_E2E_SERIAL=1 runs them one after another instead, for a
# machine too small or too busy for two labs at once.
# Each suite's whole output is printed when it ends. Any failure fails the
# run; the suites never skip.
#
# --build-only builds the labs and stops: .ci/run starts it beside make test.
set -euo pipefail
cd "$(dirname "$0")/.."
lab=./bin/relcap-lab
go=${GO:-go}
build_only=
if [ "${1:-}" = --build-only ]; then
	build_only=1
	shift
fi
versions=("$@")
[ ${#versions[@]} -gt 0 ] || { echo "usage: lab/e2e-matrix.sh VERSION..." >&2; exit 2; }
mkdir -p bin/e2e

# build_labs builds every lab the suites need, beside one another.
build_labs() {
	local start pids=() logs=() i
	start=$(date +%s)
	for v in "${versions[@]:1}"; do
		nice -n 19 "$lab" build --argocd "$v" >"bin/e2e/build-$v.log" 2>&1 &
		pids+=($!) logs+=("bin/e2e/build-$v.log")
	done
	nice -n 19 "$lab" build --gitea >bin/e2e/build-gitea.log 2>&1 &
	pids+=($!) logs+=(bin/e2e/build-gitea.log)
	trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
	"$lab" build --argocd "${versions[0]}"
	for i in "${!pids[@]}"; do
		if ! wait "${pids[i]}"; then
			echo "lab build failed (${logs[i]}):" >&2
			cat "${logs[i]}" >&2
			exit 1
		fi
	done
	trap - EXIT
	echo "== labs ready in $(( $(date +%s) - start ))s: Argo CD ${versions[*]} and Gitea =="
}

# run_suites NAME:ARGOCD_VERSION:TEST_PATTERN... runs the suites, side by
# side unless RELCAP_E2E_SERIAL=1, and prints each one's output as it ends.
run_suites() {
	local spec name v pattern pids=() names=() failed=0 start
	start=$(date +%s)
	for spec in "$@"; do
		IFS=: read -r name v pattern <<<"$spec"
		rm -f "bin/e2e/$name.rc"
		(
			s=$(date +%s)
			rc=0
			RELCAP_LAB_ARGOCD=$v "$go" test -tags e2e -count=1 -timeout 45m -run "$pattern" -v ./cmd/relcap-lab >"bin/e2e/$name.log" 2>&1 || rc=$?
			echo "$rc $(( $(date +%s) - s ))" >"bin/e2e/$name.rc"
		) &
		pids+=($!) names+=("$name")
		[ "${RELCAP_E2E_SERIAL:-}" = 1 ] && wait "$!"
	done
	trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
	wait "${pids[@]}" 2>/dev/null || true
	for name in "${names[@]}"; do
		local rc=1 secs=?
		[ -f "bin/e2e/$name.rc" ] && read -r rc secs <"bin/e2e/$name.rc"
		cat "bin/e2e/$name.log"
		if [ "$rc" = 0 ]; then
			echo "== e2e: $name passed in ${secs}s =="
		else
			echo "== e2e: $name FAILED (exit $rc) after ${secs}s =="
			failed=1
		fi
	done
	trap - EXIT
	echo "== e2e: $* in $(( $(date +%s) - start ))s =="
	return "$failed"
}

build_labs
[ -z "$build_only" ] || exit 0
# All at once: the Argo CD suites, relcap's Gitea forge against the real
# server, and the lab whose Argo CD follows Gitea's protected repository
# (relcap promotes through reviewed pull requests), once per version.
suites=("gitea:${versions[0]}:TestGiteaPromotion")
for v in "${versions[@]}"; do
	suites+=("argocd-$v:$v:TestE2E" "argocd-$v-gitea:$v:TestGiteaLab\$")
done
run_suites "${suites[@]}"
