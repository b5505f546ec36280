#!/usr/bin/env bash
# The end-to-end suite once per Argo CD version given (make e2e passes
# E2E_ARGOCD, "2.14 3.6" by default). The first version's lab is built
# first; the others build at the lowest CPU priority while the first suite
# runs (it mostly waits on Argo CD, kwok and relcap's own grace periods),
# so a cold machine does not pay for the builds one after the other.
# The lab's Gitea (issue 18) builds beside the first suite too; its
# suites run last: relcap's Gitea forge against the real server, then a
# lab whose Argo CD follows Gitea for each version.
# Any failure stops it; the suites never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
lab=./bin/relcap-lab
go=${GO:-go}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || { echo "usage: lab/e2e-matrix.sh VERSION..." >&2; exit 2; }

suite() {
	local v=$1 start
	start=$(date +%s)
	echo "== e2e: Argo CD $v =="
	RELCAP_LAB_ARGOCD=$v "$go" test -tags e2e -count=1 -timeout 45m -run TestE2E -v ./cmd/relcap-lab
	echo "== e2e: Argo CD $v passed in $(( $(date +%s) - start ))s =="
}

start=$(date +%s)
"$lab" build --argocd "${versions[0]}"
echo "== lab for Argo CD ${versions[0]} ready in $(( $(date +%s) - start ))s =="

pids=()
for v in "${versions[@]:1}"; do
	nice -n 19 "$lab" build --argocd "$v" >"bin/lab-build-$v.log" 2>&1 &
	pids+=($!)
done
nice -n 19 "$lab" build --gitea >bin/lab-build-gitea.log 2>&1 &
gitea_pid=$!
stop_builds() { for p in "${pids[@]}" "$gitea_pid"; do kill "$p" 2>/dev/null || true; done; }
trap stop_builds EXIT

suite "${versions[0]}"
for i in "${!pids[@]}"; do
	v=${versions[i+1]}
	if ! wait "${pids[i]}"; then
		echo "lab build for Argo CD $v failed:" >&2
		cat "bin/lab-build-$v.log" >&2
		exit 1
	fi
	echo "== lab for Argo CD $v built beside the previous suite ($(tail -n 1 "bin/lab-build-$v.log")) =="
	suite "$v"
done
if ! wait "$gitea_pid"; then
	echo "lab build of Gitea failed:" >&2
	cat bin/lab-build-gitea.log >&2
	exit 1
fi
trap - EXIT
start=$(date +%s)
echo "== e2e: Gitea (built beside the suites: $(tail -n 1 bin/lab-build-gitea.log)) =="
"$go" test -tags e2e -count=1 -timeout 30m -run 'TestGiteaPromotion' -v ./cmd/relcap-lab
echo "== e2e: Gitea passed in $(( $(date +%s) - start ))s =="
# The lab whose Argo CD follows Gitea's protected repository: relcap
# promotes through reviewed pull requests, once per Argo CD version.
for v in "${versions[@]}"; do
	start=$(date +%s)
	echo "== e2e: Argo CD $v following Gitea =="
	RELCAP_LAB_ARGOCD=$v "$go" test -tags e2e -count=1 -timeout 30m -run 'TestGiteaLab$' -v ./cmd/relcap-lab
	echo "== e2e: Argo CD $v following Gitea passed in $(( $(date +%s) - start ))s =="
done
