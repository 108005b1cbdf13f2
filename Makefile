# agentbox: the two set-up commands of the README (and CONTRIBUTING.md) are `make example`
# (generate the example sandbox, offline) and `make test` (all tests).

GO ?= go
EXAMPLE ?= examples/full
# What `agentbox version` says: Go embeds the revision only in a build from a
# git clone (not a worktree) with -buildvcs on, so make says it too.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
# goreleaser, built from its module once per version into bin/tools/ (v2.15.1
# is the newest that Go 1.26 builds).
GORELEASER_VERSION ?= v2.15.1
GORELEASER := $(CURDIR)/bin/tools/goreleaser-$(GORELEASER_VERSION)/goreleaser

.PHONY: all build example test test-deps docs bench fuzz clean release-check e2e-setup e2e k8s-setup k8s-down k8s-test

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/agentbox ./cmd/agentbox

## example: generate the example sandbox from examples/full/agentbox.yaml and its lock (no network)
example: build
	./bin/agentbox generate -C $(EXAMPLE)

test-deps:
	bash scripts/install-test-deps.sh

## test: install test dependencies, then vet and run every test with the race detector
test: test-deps
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -shuffle=on -count=1 ./...

## docs: regenerate the command reference docs/commands/*.md from the command tree
## and docs/agentbox-yaml-keys.md from the JSON Schema (TestDocsCommands and TestDocsConfigKeys fail when they drift)
docs:
	$(GO) test -count=1 -run '^TestDocs' ./cmd/agentbox/ -update

## bench: the performance figures of docs/performance.md
bench:
	$(GO) test -run '^$$' -bench 'Generate|Diff|Process' -benchtime 200x -count 1 ./cmd/agentbox/

## fuzz: fuzz the configuration loader for a minute
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 60s ./generator/

$(GORELEASER):
	GOBIN=$(dir $@) GOFLAGS=-trimpath $(GO) install -ldflags "-s -w" github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

## release-check: check .goreleaser.yaml, build the release archives of a snapshot
## into dist/ (gitignored) and check them (scripts/release/check.sh)
release-check: $(GORELEASER)
	$(GORELEASER) check
	$(GORELEASER) release --snapshot --clean
	bash scripts/release/check.sh dist

## e2e-setup: install and start Docker Engine, compose v2 (built from its module),
## debootstrap and the Dev Containers CLI, and build the Debian base image (root)
e2e-setup:
	bash scripts/e2e/setup.sh
	bash scripts/e2e/base-image.sh
	bash scripts/e2e/node-image.sh

## e2e: the sandbox end to end in Docker Engine, compose v2 and the Dev Containers CLI (root)
e2e: e2e-setup
	$(GO) vet -tags e2e ./internal/e2e/
	$(GO) test -tags e2e -count=1 -timeout 30m -v -run 'TestEndToEnd|TestPickBridgeAddress' ./internal/e2e/

## k8s-setup: build (cached) and start the single-node test cluster (root)
k8s-setup:
	bash scripts/k8s/cluster.sh up

## k8s-down: stop the test cluster and undo its changes to the machine (root)
k8s-down:
	bash scripts/k8s/cluster.sh down

## k8s-test: start the cluster, run Jobs shaped like the sandbox on it, stop it (root)
k8s-test:
	$(GO) vet -tags k8s ./internal/k8stest/
	$(GO) test -tags k8s -count=1 -timeout 30m -v ./internal/k8stest/

clean:
	rm -rf bin dist
