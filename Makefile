# The two commands a new user needs: `make run` (the main job on the
# embedded default) and `make test` (every test). Both install what they
# need first.

SHELL     := /bin/bash
GO        ?= go
BIN       := bin/ingestor
AZURITE   := 3.37.0
# Packages that start goroutines or processes run under the race detector.
RACE_PKGS := ./consumer/... ./uploader/... ./committer/... ./maintainer/... ./supervisor/... ./shared/... ./internal/... ./deploy/... ./cmd/...
E2E_PKGS  := ./e2e/...

.PHONY: all build run test test-unit test-e2e deps deps-azurite deps-postgres fuzz vet fmt clean

all: build

# The commit goes in by -ldflags too: Go's own vcs stamp is off when
# GOFLAGS has -buildvcs=false or the source is not a checkout.
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags "-X main.commit=$(COMMIT)" -o $(BIN) ./cmd/ingestor

# The main job on the embedded default: a local Kafka-protocol broker, a
# generator of events, a SQLite catalog and a local warehouse, and the
# supervisor with its three roles. Ctrl-C stops it in order.
# FORMAT=avro or FORMAT=protobuf shows that value format, through a schema
# registry the demo starts.
run: build
	./$(BIN) demo $(if $(FORMAT),--format $(FORMAT))

# Every test, with the real parts they need installed and started by the tests.
test: deps build vet test-unit test-e2e

test-unit:
	$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)

test-e2e: build
	INGESTOR_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 25m -v $(E2E_PKGS)

vet:
	$(GO) vet ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./consumer/decode/
	$(GO) test -run '^$$' -fuzz FuzzProtoDecode -fuzztime 60s ./consumer/decode/protodec/
	$(GO) test -run '^$$' -fuzz FuzzAppend -fuzztime 30s ./consumer/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./shared/walfile/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./shared/config/
	$(GO) test -run '^$$' -fuzz FuzzRead -fuzztime 30s ./shared/bloom/
	$(GO) test -run '^$$' -fuzz FuzzQueryValue -fuzztime 30s ./shared/bloom/

# The benchmark of the whole record path (docs/benchmarks.md): 3M narrow
# events with uniform keys at full speed through the supervisor and its
# three roles, against Azurite and a SQLite catalog; the last line of its
# output is the result as JSON. `./bin/ingestor bench -help` lists the
# other sizes; bench-all runs both shapes with both key distributions.
.PHONY: bench bench-all bench-soak
bench: deps-azurite build
	./$(BIN) bench

# The soak run (docs/benchmarks.md, "Table health over many commits"): a
# day of commits fast-forwarded, the table's health printed at checkpoints.
# SOAK_COMMITS sets its length; SOAK_FLAGS adds options, for instance
# SOAK_FLAGS=--maintenance=false, or SOAK_FLAGS='--upserts 0.3
# --maintenance=true --storage file' for the upsert soak (on file storage:
# Azurite's cost per request grows with the objects it holds).
SOAK_COMMITS ?= 1000
bench-soak: deps-azurite build
	./$(BIN) bench --soak-commits $(SOAK_COMMITS) $(SOAK_FLAGS)

bench-all: deps-azurite build
	@set -e; for shape in narrow wide; do for keys in uniform skewed; do \
		if [ $$shape = narrow ]; then n=500000; else n=150000; fi; \
		./$(BIN) bench --shape $$shape --keys $$keys --events $$n; \
	done; done

deps: deps-azurite deps-postgres

# Azurite, the Azure Storage emulator, from npm into ./node_modules.
deps-azurite:
	@test -x node_modules/.bin/azurite-blob || npm install --no-save --no-package-lock --no-audit --no-fund azurite@$(AZURITE)

# PostgreSQL from Debian's packages, for the SQL catalog tests.
deps-postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin e2e.log
