# Primer. `make run` starts the platform on embedded defaults; `make test` runs
# every test (unit, workflow time-skipping, replay, store on SQLite and
# PostgreSQL, end to end against the real embedded Temporal server).

GO        ?= go
BIN       ?= bin
DATA_DIR  ?= $(CURDIR)/.data
TEST_TIMEOUT ?= 45m
# Packages with heavy end-to-end tests run one at a time on small machines.
TEST_P    ?= 2
# STATICCHECK is pinned; `go run pkg@version` keeps the built binary in the
# Go build cache, so only the first run on a machine builds it.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.6.1
# NORACE matches the packages whose tests drive container engines, the
# Kubernetes cluster, the whole platform (e2e), the embedded Temporal server
# (worker, cmd/primer) or a root-only runtime: they run without -race, which
# would slow them several times over for code the unit and workflow packages
# already cover, and a race build of the Temporal server alone costs a cold
# machine about ten minutes. Every other package runs with -race.
NORACE    ?= /e2e$$|/backend/(container|kubernetes)(/|$$)|/cmd/primer(-runtime)?$$|/worker(/|$$)|/examples/
RACE_PKGS  = $(shell $(GO) list ./... | grep -Ev '$(NORACE)')
OTHER_PKGS = $(shell $(GO) list ./... | grep -E '$(NORACE)')

.PHONY: all build run test test-short test-e2e-twice bench lint vet workflowcheck staticcheck fmt-check tidy-check layers fmt clean-data record-histories openapi sdk-ts-types images engines test-cluster-up test-cluster-down k8s-runtime-image temporal-cluster-up temporal-cluster-down

all: build

build:
	$(GO) build -o $(BIN)/primer ./cmd/primer
	$(GO) build -o $(BIN)/primectl ./cmd/primectl
	CGO_ENABLED=0 $(GO) build -o $(BIN)/primer-runtime ./cmd/primer-runtime

## run: the whole platform in one process on embedded defaults (SQLite, embedded Temporal + web UI).
run: build
	PRIMER_DATA_DIR=$${PRIMER_DATA_DIR:-$(DATA_DIR)} $(BIN)/primer serve

## test: the lint gates, then every test: the unit and workflow packages with -race, the rest (NORACE) without.
## Set PRIMER_TEST_DATABASE_URL=postgres://... to include PostgreSQL (.ci/run does). Both runs go to the end; either failing fails.
test: lint
	@rc=0; \
	echo "$(GO) test -race -p $(TEST_P) -timeout $(TEST_TIMEOUT) -count=1 <all packages but NORACE>"; \
	$(GO) test -race -p $(TEST_P) -timeout $(TEST_TIMEOUT) -count=1 $(RACE_PKGS) || rc=1; \
	echo "$(GO) test -p $(TEST_P) -timeout $(TEST_TIMEOUT) -count=1 <NORACE packages>"; \
	$(GO) test -p $(TEST_P) -timeout $(TEST_TIMEOUT) -count=1 $(OTHER_PKGS) || rc=1; \
	exit $$rc

## images: the container images the tests and examples use, built from Debian's packages without a registry (skips what exists).
images:
	GO=$(GO) bash deploy/images/build.sh

## engines: start Docker and the Podman API service when they are not running (as root; installs them when missing).
engines:
	bash deploy/ci/engines.sh

## test-cluster-up: a real single-node Kubernetes for the Kubernetes backend's tests (as root; deploy/k8s/README.md). Then: export KUBECONFIG=/var/lib/primer-k8s/admin.kubeconfig
# It imports the images the tests run (PRIMER_K8S_IMAGES, from Docker: `make images`) and the runtime image of bin/primer-runtime.
test-cluster-up: build
	PRIMER_K8S_IMAGES="$${PRIMER_K8S_IMAGES-primer/busybox:1.0 primer/python:1.0}" bash deploy/k8s/cluster.sh up
	$(MAKE) --no-print-directory k8s-runtime-image

## k8s-runtime-image: the Kubernetes backend's runtime image (primer/runtime:<digest> of bin/primer-runtime), imported into the test cluster.
k8s-runtime-image: build
	$(BIN)/primer runtime-image -o $(BIN)/primer-runtime-image.tar --runtime-binary $(BIN)/primer-runtime
	bash deploy/k8s/cluster.sh import $(BIN)/primer-runtime-image.tar

.PHONY: image-primer k8s-primer-image k8s-deploy-test

## image-primer: Primer's own image, primer/primer:<digest of bin/primer and bin/primer-runtime>, built into Docker without a registry on primer/python:1.0 (`make images`); skipped when built.
image-primer: build
	bash deploy/images/primer-image.sh

## k8s-primer-image: Primer's image imported into the test cluster (after test-cluster-up); skipped when it has it.
k8s-primer-image: build
	bash deploy/images/primer-image.sh --import

## k8s-deploy-test: Primer deployed into the test cluster (deploy/kubernetes/overlays/test) and driven through its Service: e2e TestKubernetesDeploy.
k8s-deploy-test: k8s-runtime-image k8s-primer-image
	KUBECONFIG=$${KUBECONFIG:-/var/lib/primer-k8s/admin.kubeconfig} $(GO) test -count=1 -timeout 20m -run '^TestKubernetesDeploy$$' -v ./e2e/

## test-cluster-down: stop the test cluster and undo what test-cluster-up did to the host.
test-cluster-down:
	bash deploy/k8s/cluster.sh down

## temporal-cluster-up: a real Temporal cluster (its own process, PostgreSQL persistence and visibility; deploy/temporal/README.md), built once per version into ~/.cache/primer-temporal. Prints PRIMER_TEMPORAL_ADDRESS=host:port.
temporal-cluster-up:
	GO=$(GO) bash deploy/temporal/cluster.sh up

## temporal-cluster-down: stop the Temporal cluster (its databases stay).
temporal-cluster-down:
	bash deploy/temporal/cluster.sh down

test-short:
	$(GO) test -short -count=1 ./...

## test-e2e-twice: the e2e package twice at once (two go test processes), as on a loaded CI machine: tests that wait on deadlines must hold. The second run skips what acts on shared things (the test cluster's node and kubelet, its fixed deploy namespace, the vm hosts' fixed containers, and the 200-workspace cluster test, which alone holds most of PostgreSQL's connection slots). Logs in bin/e2e-twice-{1,2}.log; E2E_TWICE_RUN narrows both runs (a -run pattern).
E2E_TWICE_SKIP ?= TestKubernetesFaults|TestKubernetesDeploy|TestVM|TestAttackVM|TestVMCrash|TestClusterScaleApart
E2E_TWICE_RUN ?= .
test-e2e-twice:
	@mkdir -p bin; rc=0; start=$$(date +%s); \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(E2E_TWICE_RUN)' ./e2e/ >bin/e2e-twice-1.log 2>&1 & p1=$$!; \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(E2E_TWICE_RUN)' -skip '$(E2E_TWICE_SKIP)' ./e2e/ >bin/e2e-twice-2.log 2>&1 & p2=$$!; \
	wait $$p1 || rc=1; wait $$p2 || rc=1; \
	for i in 1 2; do echo "== run $$i"; grep -E '^(--- FAIL|FAIL|ok|panic)' bin/e2e-twice-$$i.log || tail -n 20 bin/e2e-twice-$$i.log; done; \
	echo "test-e2e-twice: $$(( $$(date +%s) - start )) s, exit $$rc"; exit $$rc

## bench: speed targets of the issues, against raw baselines in the same run, printed as tables.
bench:
	PRIMER_BENCH=1 $(GO) test -tags bench -count=1 -timeout 120m -run 'Bench' -v ./e2e/ 2>&1 | grep -E '^(\||#|---|PASS|FAIL|ok|\s+bench)' || true
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 2000x ./runtime/client/
	PRIMER_BENCH=1 $(GO) test -tags bench -count=1 -timeout 10m -run 'TestBenchBeacon' -v ./activities/ 2>&1 | grep -E '^(\||#|---|PASS|FAIL|ok)|bench beacon' || true
	$(GO) test -count=1 -run '^$$' -bench Lease -benchtime 2000x ./models/
	$(GO) test -tags bench -count=1 -timeout 20m -run 'TestBenchRestore' -v ./backend/kubernetes/ 2>&1 | grep -E 'bench restore|^(---|PASS|FAIL|ok)' || true

vet:
	$(GO) vet ./...

workflowcheck:
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...

## lint: the gates make test runs first, each failing with what to fix: gofmt, go mod tidy, vet, staticcheck, workflowcheck, the import floors.
lint: fmt-check tidy-check vet staticcheck workflowcheck layers

## layers: fails on an import that goes up a floor (the allowed graph is deploy/ci/layers.txt).
layers:
	@bash deploy/ci/layers.sh

fmt-check:
	@files="$$(gofmt -l .)"; if [ -n "$$files" ]; then \
		echo "gofmt: these files are not formatted; run make fmt:"; echo "$$files"; exit 1; fi

tidy-check:
	@out="$$($(GO) mod tidy -diff 2>&1)" || { \
		echo "go mod tidy: go.mod or go.sum is not tidy; run go mod tidy. The change it would make:"; echo "$$out"; exit 1; }

staticcheck:
	$(GO) run $(STATICCHECK) -tags bench,record ./...

## record-histories: re-record the replay-test histories in workflows/testdata (after a versioned workflow change).
record-histories:
	PRIMER_RECORD_HISTORY=1 $(GO) test -tags record -count=1 -timeout 20m ./workflows/recorder/

## openapi: write docs/openapi.json again from api/openapi (after a route or a wire type changed), and the TypeScript SDK's types from it.
openapi:
	PRIMER_WRITE_OPENAPI=1 $(GO) test -count=1 -run '^TestDocumentInSync$$' ./api/openapi/
	@if [ -x sdk/typescript/node_modules/.bin/openapi-typescript ]; then $(MAKE) --no-print-directory sdk-ts-types; else echo "openapi: sdk/typescript/src/schema.ts not regenerated (cd sdk/typescript && npm ci, then make sdk-ts-types)"; fi

## sdk-ts-types: write the TypeScript SDK's types (sdk/typescript/src/schema.ts) again from docs/openapi.json, and its dist/ (needs npm ci in sdk/typescript).
sdk-ts-types:
	cd sdk/typescript && node_modules/.bin/openapi-typescript ../../docs/openapi.json -o src/schema.ts && node_modules/.bin/tsc -p tsconfig.json

fmt:
	gofmt -w $$(git ls-files '*.go')

clean-data:
	rm -rf $(DATA_DIR)
