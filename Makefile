# devsandbox — make help lists the targets.
# Build tags apply to every go command. urfave_cli_no_docs drops urfave/cli's
# man-page generator (and its init cost) from the binary. The others build podman's
# bindings (devsandbox-krun) without C libraries: an untagged `go vet ./...` fails on
# missing C headers.
PODMAN_TAGS := remote exclude_graphdriver_btrfs exclude_graphdriver_devicemapper containers_image_openpgp
TAGS     ?= urfave_cli_no_docs $(PODMAN_TAGS)
GO       ?= go
GOFLAGS_ := -tags '$(TAGS)'
BIN      := bin/devsandbox
# Every binary `make build` makes (each from cmd/NAME) and `make install` and
# scripts/install.sh install: devsandbox, the in-sandbox init (every role), the bwrap
# isolator's init (its roles only: it starts on every bwrap launch), the egress proxy,
# the docker and krun backends.
BINARIES := devsandbox devsandbox-init devsandbox-bwrap-init devsandbox-proxy devsandbox-docker devsandbox-krun
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Every binary of one build carries the same build stamp (an ELF build-id note):
# devsandbox refuses a helper beside it from another build (internal/buildstamp).
STAMP    := $(shell scripts/buildstamp.sh '$(VERSION)')
LDFLAGS  := -s -w -B $(STAMP) -X github.com/devsandbox/devsandbox/config.Version=$(VERSION)
PREFIX   ?= /usr/local

.PHONY: help build vet lint test unit race integration bench bench-docker bench-krun bench-ctrlz profile-launch embed darwin install install-bin setup clean

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/devsandbox, bin/devsandbox-init (the in-sandbox init), bin/devsandbox-bwrap-init (the bwrap isolator's init), bin/devsandbox-proxy (the egress proxy), bin/devsandbox-docker (the docker backend) and bin/devsandbox-krun (the krun backend)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_) -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(BINARIES))

vet: ## go vet with the build tags
	$(GO) vet $(GOFLAGS_) ./...
	$(GO) vet -tags '$(TAGS) integration' ./integration/

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: vet ## gofmt, vet, the Linux arm64 cross-build, the macOS cross-build (arm64, amd64) and vet, staticcheck, shellcheck (when installed)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GOOS=linux GOARCH=arm64 $(GO) build $(GOFLAGS_) ./...
	GOOS=darwin GOARCH=arm64 $(GO) build $(GOFLAGS_) ./...
	GOOS=darwin GOARCH=amd64 $(GO) build $(GOFLAGS_) ./...
	GOOS=darwin $(GO) vet $(GOFLAGS_) ./...
	$(GO) run $(STATICCHECK) -tags '$(TAGS)' ./...
	$(GO) run $(STATICCHECK) -tags '$(TAGS) integration' ./integration/
	@if command -v shellcheck >/dev/null; then shellcheck scripts/*.sh .ci/run; else echo "shellcheck not installed: apt-get install shellcheck"; fi

setup: ## install and start what the tests need (root: apt packages, test user)
	scripts/setup-test-env.sh

unit: ## unit tests of the pure code
	$(GO) test $(GOFLAGS_) -count=1 ./...

race: ## the unit tests under the race detector (its packages take about 3.7 times their time under `unit`: 388 against 105 s summed, 2026-12-07; not part of CI, whose budget it would break: run it before merging concurrent code)
	$(GO) test $(GOFLAGS_) -race -count=1 ./...

integration: build ## the conformance suite against real components, as an unprivileged user (RUN=REGEXP: only those tests)
	DEVSANDBOX_BIN=$(CURDIR)/$(BIN) DEVSANDBOX_BINARIES="$(BINARIES)" DEVSANDBOX_IT_ISOLATORS="$${DEVSANDBOX_IT_ISOLATORS:-bwrap docker docker-remote krun}" $(GO) test $(GOFLAGS_) -tags '$(TAGS) integration' -count=1 -timeout 60m -v $(if $(RUN),-run '$(RUN)') ./integration/ 2>&1 | scripts/test-summary.sh

test: setup lint unit integration ## everything CI runs: set up, lint (gofmt, vet, the macOS build, staticcheck, shellcheck), unit and integration tests

bench: build ## launch benchmarks against the raw tools, proxy throughput against direct downloads, MITM throughput in process (root; not part of CI)
	scripts/bench.sh $(BIN)

profile-launch: ## CPU profiles of devsandbox and its bwrap init merged over thousands of real launches, into launch-profiles/ (root; PROFILE_RUNS, PROFILE_USER)
	TAGS='$(TAGS)' scripts/profile-launch.sh launch-profiles

bench-docker: build ## docker isolator launches (cold, and warm with keep_container) against the docker CLI
	$(GO) run ./scripts/benchdocker -bin $(BIN) -n $${BENCH_RUNS:-20}

bench-krun: build ## krun isolator launches (krun.runtime = runc) against podman run --rm of the same image, as the test user
	$(GO) run ./scripts/benchkrun -bin $(BIN) -n $${BENCH_RUNS:-20}

bench-ctrlz: build ## Ctrl-Z typed on a shell's terminal to the shell's "Stopped", devsandbox as its job, per isolator (bwrap, docker, docker-remote, krun with runc), alternating (root; BENCH_RUNS, BENCH_ISOLATORS, BENCH_DSTATE=1 holds a process in 'D' across the stop)
	$(GO) run ./scripts/benchctrlz -bin $(BIN) -n $${BENCH_RUNS:-20} -isolators "$${BENCH_ISOLATORS:-bwrap docker docker-remote krun}" $(if $(filter 1,$(BENCH_DSTATE)),-dstate)

embed: ## build Linux devsandbox-init and devsandbox-proxy (amd64, arm64) into isolator/docker/initbin for a macOS build
	for a in amd64 arm64; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o isolator/docker/initbin/devsandbox-init-linux-$$a ./cmd/devsandbox-init && \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build $(GOFLAGS_) -trimpath -ldflags '$(LDFLAGS)' -o isolator/docker/initbin/devsandbox-proxy-linux-$$a ./cmd/devsandbox-proxy || exit 1; \
	done

darwin: embed ## cross-build devsandbox, devsandbox-docker (Linux init and proxy embedded) and devsandbox-proxy for macOS into bin/darwin/
	CGO_ENABLED=0 GOOS=darwin $(GO) build -tags '$(TAGS) embedinit' -trimpath -ldflags '$(LDFLAGS)' -o bin/darwin/ ./cmd/devsandbox ./cmd/devsandbox-docker ./cmd/devsandbox-proxy

install: build install-bin ## build, then install every binary (devsandbox and its helpers: see build) to PREFIX/bin (PREFIX=/usr/local unless given)

install-bin: ## install the built binaries to PREFIX/bin without building (scripts/install.sh uses it)
	@for b in $(BINARIES); do test -x bin/$$b || { echo "bin/$$b is missing: run make build first" >&2; exit 1; }; done
	for b in $(BINARIES); do install -D -m 0755 bin/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done

clean: ## remove build output
	rm -rf bin
