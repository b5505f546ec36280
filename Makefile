# relcap — build, test and demo. Every target installs what it needs.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TERRAFORM_VERSION := 1.5.7
# ./bin first, so tools installed here win over nothing else being there.
export PATH := $(BIN):$(PATH)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# -s -w drop the symbol table and DWARF data, as the release build
# (.goreleaser.yaml) does: 190 MB -> 136 MB (docs/PERFORMANCE.md, "Start-up").
# Panics still print file:line (pclntab stays); debuggers need a build without.
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: all build test test-race test-norace demo terraform tools vet fmt-check fuzz bench load clean

all: build

# CGO_ENABLED=0 as the release build (modernc.org/sqlite is pure Go). With
# cgo, kustomize's plugin loader (linked through argo-cd's types, in
# relcap-argocd) makes the linker treat the helper as able to load Go plugins: it keeps every exported
# method and runs the initialisers of package-level maps nothing uses, and
# the binary starts through the dynamic loader (docs/PERFORMANCE.md, "Start-up").
# relcap-argocd is relcap's Argo CD helper, found beside relcap
# (docs/ARCHITECTURE.md, "Process boundary"): every build makes both.
build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/relcap ./cmd/relcap
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/relcap-argocd ./cmd/relcap-argocd

# Terraform 1.5.7 (the last MPL release, go-installable) into ./bin when no
# terraform is on PATH. The adapters are tested against a real binary.
terraform:
	@if command -v terraform >/dev/null 2>&1; then \
		echo "terraform: $$(command -v terraform) ($$(terraform version | head -n1))"; \
	else \
		echo "terraform: installing $(TERRAFORM_VERSION) into ./bin"; \
		GOBIN=$(BIN) $(GO) install github.com/hashicorp/terraform@v$(TERRAFORM_VERSION); \
	fi

# tmux drives the real binary in the cockpit's end-to-end test; git backs the
# environment-repo tests; OpenSSH's ssh-keygen, ssh-agent and ssh-add check
# relcap's signatures; sqlite3 is the floor BenchmarkReport100k compares the
# effort report with. Debian packages (tool:package), installed when missing.
# The PostgreSQL ledger is tested against a real server: the tests start a
# throw-away cluster with initdb and postgres (adapters/store/pgtest), which
# Debian's postgresql package puts in /usr/lib/postgresql/<version>/bin, off
# PATH; nothing is installed when RELCAP_TEST_POSTGRES names a server instead.
tools: terraform
	@for pair in tmux:tmux git:git ssh-keygen:openssh-client ssh-agent:openssh-client ssh-add:openssh-client sqlite3:sqlite3; do \
		tool=$${pair%%:*}; pkg=$${pair#*:}; \
		command -v $$tool >/dev/null 2>&1 && continue; \
		echo "$$tool: installing $$pkg with apt-get"; \
		{ apt-get update -qq && apt-get install -y -qq $$pkg; } || { echo "could not install $$pkg: install it and run make test again"; exit 1; }; \
	done
	@if [ -n "$$RELCAP_TEST_POSTGRES" ] || command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
		echo "initdb: installing postgresql with apt-get"; \
		{ apt-get update -qq && apt-get install -y -qq postgresql; } || { echo "could not install postgresql: install it, or set RELCAP_TEST_POSTGRES to a server's URL, and run make test again"; exit 1; }; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The gofmt check and go vet run beside the tests rather than before them:
# neither needs the race build the tests wait for, and a warm vet is mostly
# cache lookups. A failure of any of the three fails make test; their
# output is interleaved by line.
test: tools
	@$(MAKE) --no-print-directory -j3 --output-sync=line fmt-check vet test-race test-norace

# -timeout is per package and explicit: the slowest package, cmd/relcap,
# takes under 3 minutes under -race on an idle 2-core machine and has taken
# over 10 (the default) on a loaded one; 40 minutes leaves that headroom
# several times over while a hung test still fails the run rather than
# hanging CI (docs/PERFORMANCE.md, "The suite and CI"). -parallel 6: most
# of cmd/relcap's tests wait on Terraform, relcap processes and polls, so
# two at a time (the default on 2 cores) left a core idle.
test-race:
	$(GO) test -race -count=1 -parallel 6 -timeout 40m ./...

# Tests built only without the race detector (//go:build !race, and the
# line "// make test-norace runs this file's tests." in the file): one
# goroutine's heavy work, where -race finds nothing and costs 8x the time.
# Their packages run once more here, without -race; test-norace-list says
# which, and fails when there is none (a renamed marker must not make a
# test silently stop running).
NORACE_PKGS = $(shell grep -rl --include='*_test.go' "^// make test-norace runs this file's tests.$$" . | xargs -r -n1 dirname | sort -u)
test-norace:
	@[ -n "$(NORACE_PKGS)" ] || { echo "test-norace: no test file carries the marker; see the Makefile"; exit 1; }
	$(GO) test -count=1 -timeout 20m $(NORACE_PKGS)

# Short fuzz runs of every parser; FUZZTIME=5m for a longer soak. Minimizing
# a new input is capped: the default (60 s each) would spend a short run
# minimizing rather than fuzzing.
FUZZTIME ?= 30s
FUZZFLAGS = -run '^$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=200x
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzLoadConfig ./workflow/config/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzLoadOwnership ./workflow/config/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzReviewJSON ./adapters/terraform/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzScrub ./workflow/secret/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzPinKustomize ./adapters/gitrepo/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzPinHelmValues ./adapters/gitrepo/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzPinManifest ./adapters/gitrepo/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzParseAllowedSigners ./adapters/signing/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzParseManifests ./adapters/render/
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzLiveFieldManagers ./workflow/ownership/

bench: tools
	$(GO) test -run '^$$' -bench=. -benchmem ./...

# The team store under load (issue 17): LOAD_PROCS relcap processes (the
# store's test binary run again as children) record journal entries, signed
# approvals and effort against one PostgreSQL for LOAD_DURATION each; then
# every row is counted against what the processes wrote and every session's
# chain verified from the ledger and from its file. It prints entries/s,
# approvals, effort rows and the append latency's p50/p99 (figures in
# docs/PERFORMANCE.md). make test runs the same test for 5 s, under -race.
LOAD_PROCS ?= 20
LOAD_DURATION ?= 60s
load: tools
	RELCAP_LOAD_PROCS=$(LOAD_PROCS) RELCAP_LOAD_DURATION=$(LOAD_DURATION) \
		$(GO) test -count=1 -timeout 30m -run '^TestLoadManyProcessesLoseNothing$$' -v ./adapters/store/

# The whole release on the embedded sandbox: an in-process registry, the
# Argo CD API simulator, a bare environment repo and Terraform roots, all in a
# temporary directory. DEMO_FLAGS=--headless for a run without a terminal.
DEMO_FLAGS ?=
demo: build terraform
	$(BIN)/relcap demo $(DEMO_FLAGS)

clean:
	rm -rf $(BIN)/relcap $(BIN)/relcap-argocd dist

# The lab (issue 8): a real kube-apiserver and Argo CD on loopback, driven by
# cmd/relcap-lab. Binaries are built in the separate modules under lab/ and
# cached under $XDG_CACHE_HOME/relcap/lab/bin/<versions>; LAB_DIR picks the
# lab directory (default $XDG_STATE_HOME/relcap/lab); ARGOCD picks the Argo CD
# it runs (2.14 on Kubernetes 1.31, or 3.6 on Kubernetes 1.37).
LAB_DIR ?=
LAB_DIR_FLAG := $(if $(LAB_DIR),--dir $(LAB_DIR))
ARGOCD ?= 2.14
.PHONY: lab-build lab-up lab-down lab-status relcap-lab

relcap-lab:
	$(GO) build -o $(BIN)/relcap-lab ./cmd/relcap-lab

lab-build: relcap-lab
	$(BIN)/relcap-lab build --argocd $(ARGOCD)

lab-up: relcap-lab build
	$(BIN)/relcap-lab up --argocd $(ARGOCD) $(LAB_DIR_FLAG)

lab-status: relcap-lab
	$(BIN)/relcap-lab status $(LAB_DIR_FLAG)

lab-down: relcap-lab
	$(BIN)/relcap-lab down $(LAB_DIR_FLAG)

# The end-to-end suite against a real lab (started and stopped by the test
# itself; binaries from the lab cache, built on first use), once per Argo CD
# version in E2E_ARGOCD; later versions' labs build at low priority while the
# first suite runs (lab/e2e-matrix.sh). It never skips; a failure stops it.
E2E_ARGOCD ?= 2.14 3.6
.PHONY: e2e lab-prebuild
e2e: tools relcap-lab
	GO=$(GO) lab/e2e-matrix.sh $(E2E_ARGOCD)

# Every lab make e2e needs, built (or found in the cache) and nothing run:
# .ci/run starts it beside make test at the lowest priority, so a cold run
# downloads and builds the labs while the tests wait on Terraform and
# polls, and make e2e finds them ready.
lab-prebuild: relcap-lab
	GO=$(GO) nice -n 19 lab/e2e-matrix.sh --build-only $(E2E_ARGOCD)

# relcap's Gitea adapter against the lab's real Gitea (issue 18): Gitea is
# built into the lab cache on first use (~10 min of CPU; 20 min wall at nice
# 19 on a busy 2-core machine; reused at once after) and started by the tests
# themselves; then a lab whose Argo CD follows Gitea, promoted through
# reviewed pull requests, for each version in E2E_ARGOCD. make e2e runs the
# same at its end.
.PHONY: e2e-gitea
e2e-gitea: tools relcap-lab
	nice -n 19 $(BIN)/relcap-lab build --gitea
	$(GO) test -tags e2e -count=1 -timeout 30m -run TestGiteaPromotion -v ./cmd/relcap-lab
	for v in $(E2E_ARGOCD); do \
		RELCAP_LAB_ARGOCD=$$v $(GO) test -tags e2e -count=1 -timeout 30m -run 'TestGiteaLab$$' -v ./cmd/relcap-lab || exit 1; \
	done

# Convergence detection side by side with argocd app wait --sync --health on
# a lab of each Argo CD version (issue 14; figures in docs/PERFORMANCE.md).
# BENCH_SYNCS syncs per version (at least 10); BENCH_OUT collects the summaries.
BENCH_SYNCS ?= 10
BENCH_OUT ?= $(CURDIR)/bin/bench-convergence.txt
.PHONY: bench-lab
bench-lab: tools
	@for v in $(E2E_ARGOCD); do \
		RELCAP_LAB_ARGOCD=$$v RELCAP_BENCH_SYNCS=$(BENCH_SYNCS) RELCAP_BENCH_OUT=$(BENCH_OUT) \
			$(GO) test -tags 'e2e labbench' -count=1 -timeout 30m -run TestBenchConvergenceDetection -v ./cmd/relcap-lab || exit 1; \
	done
	@cat $(BENCH_OUT)
