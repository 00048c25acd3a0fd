# cairn — see README.md and docs/make.md. Every target installs or fetches what it needs.
GO        ?= go
BIN       := bin
FUNCTIONS := $(notdir $(wildcard functions/*))
FUZZTIME  ?= 5000x
export GOFLAGS := -buildvcs=false

.PHONY: all build cli lambdas test test-unit test-infra fuzz bench bench-realtime demo docs fmt vet lint deps synth test-awscli test-browser crash clean

all: build

deps:
	$(GO) mod download

build: cli lambdas

# The commit the CLI reports (cairn version): -buildvcs=false keeps builds free of git, so
# it is linked in, with -dirty when the work tree has uncommitted changes; empty outside git.
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git rev-parse HEAD >/dev/null 2>&1 && ! git diff --quiet HEAD 2>/dev/null && echo -dirty)

cli:
	$(GO) build -ldflags '-X github.com/cairn-dev/cairn/internal/version.Commit=$(COMMIT)' -o $(BIN)/cairn ./cmd/cairn

# Each Lambda is a provided.al2023 arm64 "bootstrap" binary: no RPC server (lambda.norpc), no
# HTTP/2 client (nethttpomithttp2: every AWS API cairn calls speaks HTTP/1.1), and the AWS
# configuration from the function's environment alone (cairn.lambda: awsclient.ForFunction,
# without the SDK's shared-file, profile and SSO chain), which keeps the deployer under
# 15 MB. The cold-start benchmark builds with these tags too.
LAMBDA_TAGS = lambda.norpc,nethttpomithttp2,cairn.lambda

lambdas:
	@for f in $(FUNCTIONS); do \
		echo "build functions/$$f -> $(BIN)/lambda/$$f/bootstrap"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags $(LAMBDA_TAGS) -trimpath -ldflags='-s -w' \
			-o $(BIN)/lambda/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# test: unit and integration tests with the race detector, short fuzz runs, the emulator against
# the real AWS CLI (skipped when it is not installed), then the
# CDK app's tests in their own run (jsii is slow and large under -race).
test: deps lint test-unit fuzz test-awscli test-infra

# -p 3 on two cores: a third package's tests run while one waits on the emulator's real-time
# delays (the quick tour, the workflow jobs), which leaves a core idle at -p 2.
test-unit:
	$(GO) test -race -count=1 -p 3 -parallel 6 -timeout 15m $$($(GO) list ./... | grep -v /infra)

test-infra:
	@if [ -n "$$($(GO) list ./infra/... 2>/dev/null)" ]; then $(GO) test -count=1 -timeout 15m ./infra/...; fi

# Fuzz every Fuzz* target briefly; corpora live in testdata/fuzz (see docs/make.md). The budget is
# a count of executions, not a duration: Go 1.26's fuzzer can fail a duration-bounded run with
# a spurious "context deadline exceeded" when time runs out mid-execution (golang/go#75804).
fuzz:
	@for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd 2>/dev/null); do \
		pkg=./$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
			echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# crash: the crash suite's long run (internal/crashtest): SEEDS random seeds of one to three
# crash points each, RESTART_SEEDS more that also restart `cairn local up` on its --dir at
# the points they draw, and with SWEEP=1 a crash before and after every AWS call of the
# scenario.
SEEDS ?= 200
RESTART_SEEDS ?= 50
SWEEP ?=
crash:
	CAIRN_CRASH_SEEDS=$(SEEDS) CAIRN_CRASH_RESTART_SEEDS=$(RESTART_SEEDS) CAIRN_CRASH_SWEEP=$(SWEEP) $(GO) test -race -count=1 -timeout 3h -v -run 'TestCrash' ./internal/crashtest/

# bench: every benchmark with its figures (benchstat reads bin/bench.txt), BENCH_COUNT runs
# of each, package by package with the load average written before each ("# load
# average:", which benchstat ignores), then the table of the performance goals: each
# figure the median of its runs, its goal, whether it holds, and the load it was measured
# under (internal/benchgoals). The machine may be shared: the load says how much. -short
# leaves out the benchmarks that take minutes a run in real time: make bench-realtime.
BENCH_COUNT ?= 5
bench:
	@mkdir -p $(BIN)
	@{ status=0; for p in $$($(GO) list ./... | grep -v /infra); do \
		echo "# load average: $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) ($$p)"; \
		$(GO) test -run '^$$' -bench . -benchmem -short -count $(BENCH_COUNT) -timeout 60m $$p || status=1; \
	done; echo $$status > $(BIN)/bench.status; } | tee $(BIN)/bench.txt
	@$(GO) run ./internal/benchgoals < $(BIN)/bench.txt
	@exit $$(cat $(BIN)/bench.status)

# bench-realtime: what a user waits for, in real time: `cairn push --wait` of 500
# independent stacks on `cairn local up` with AWS-like delays (2 to 3 minutes a run),
# REALTIME_COUNT runs, the median of each figure with the load average. CAIRN_BENCH_CLI=PATH
# drives another cairn binary (a build of an earlier commit) the same way.
REALTIME_COUNT ?= 3
bench-realtime:
	@echo "# load average: $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
	$(GO) test -run '^$$' -bench 'RealTime$$' -benchtime $(REALTIME_COUNT)x -timeout 60m ./cmd/cairn

demo: cli
	./$(BIN)/cairn demo

# docs: the command reference, docs/commands/*.md, a page per command as cobra's doc
# generator writes it from the CLI's command tree. The generator is a test of cmd/cairn
# (the command tree is package main's), which fails in make test when the committed pages
# differ from what it generates; -update-docs makes it write them instead.
docs:
	$(GO) test -count=1 -run '^TestCommandReference$$' ./cmd/cairn -update-docs

fmt:
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

vet:
	$(GO) vet ./...

# lint: go vet and staticcheck (staticcheck.conf says which checks are off, and why) over
# everything but the CDK app, whose jsii build is tested on its own (test-infra). staticcheck
# is fetched through the module proxy at a pinned version, outside go.mod.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) vet $$($(GO) list ./... | grep -v /infra)
	$(GO) run $(STATICCHECK) $$($(GO) list ./... | grep -v /infra)

clean:
	rm -rf $(BIN) .cairn

# --- cairn's own stack (infra/, the AWS CDK app in Go; see infra/README.md) ---
INFRA_FUNCTIONS := deployer ports drift policy
CDK             ?= npx --yes aws-cdk@2
CDK_FLAGS       ?=

.PHONY: infra-lambdas deploy

# infra-lambdas: the four Lambda binaries the stack packages, built by `build`.
infra-lambdas: build
	@for f in $(INFRA_FUNCTIONS); do \
		if [ ! -f $(BIN)/lambda/$$f/bootstrap ]; then \
			echo "infra: $(BIN)/lambda/$$f/bootstrap is missing: functions/$$f does not exist yet or failed to build;" \
				"cairn's stack needs all of $(INFRA_FUNCTIONS)" >&2; \
			exit 1; \
		fi; \
	done

# synth: writes the template to infra/cdk.out/Cairn.template.json, and the golden copy local
# mode deploys (internal/localcairn/cairn.template.json, with placeholder Lambda code so its
# asset hashes do not change with every build). No AWS account or credentials needed: the
# stack is environment-agnostic and context comes from infra/cdk.json.
synth: infra-lambdas
	cd infra && CDK_OUTDIR=cdk.out $(GO) run .
	@echo "synth: wrote infra/cdk.out/Cairn.template.json"
	cd infra && $(GO) test -count=1 -run '^(TestGoldenTemplate|TestLocalModeMatchesSynthesis)$$' . -update
	@echo "synth: wrote internal/localcairn/cairn.template.json and target.template.json (what cairn local up deploys; placeholder Lambda code)"

# deploy: `cdk deploy` of cairn's stack into the account and region of the current AWS
# credentials (AWS_PROFILE, AWS_REGION...). Needs `cdk bootstrap` once per account and
# region; pass context with CDK_FLAGS='-c cairn:namespaces=shop,web'.
deploy: infra-lambdas
	cd infra && $(CDK) deploy --require-approval broadening $(CDK_FLAGS)

# test-awscli: drive `cairn local up` with the real AWS CLI (Debian's awscli) and check the
# results; skipped with a message when aws is not installed.
test-awscli: cli
	@bash internal/awslocal/testdata/awscli.sh $(BIN)/cairn

# test-browser: the run and plan pages in headless Chromium (Debian's chromium; skipped, saying
# so, without one), with its figures; screenshots in artifacts/runpage/. make test runs it too.
test-browser:
	$(GO) test -count=1 -v -run '^TestRunPageInBrowser$$' ./cmd/cairn

# spec: regenerate internal/resourcespec/spec.txt.gz, the CloudFormation resource specification
# templates are checked against, from the provider schemas of the installed cfn-lint
# (`pip install cfn-lint`). The file is committed: builds and CI never need this.
.PHONY: spec
spec:
	python3 internal/resourcespec/genspec.py > internal/resourcespec/spec.txt.tmp && gzip -9n < internal/resourcespec/spec.txt.tmp > internal/resourcespec/spec.txt.gz.tmp \
		&& mv internal/resourcespec/spec.txt.gz.tmp internal/resourcespec/spec.txt.gz && rm internal/resourcespec/spec.txt.tmp

# sam-data: regenerate internal/sam/translator.json.gz, the policy templates and managed policy
# ARNs of AWS's SAM translator (Apache-2.0), from the installed aws-sam-translator
# (`pip install aws-sam-translator`). The file is committed: builds and CI never need this.
.PHONY: sam-data
sam-data:
	python3 internal/sam/gendata.py

# apimodels: AWS's API models of the services the local emulator serves (botocore's
# service JSON, Apache-2.0), copied from the installed botocore into
# internal/awslocal/testdata/apimodels with its LICENSE, NOTICE and PINNED version (another
# version is refused unless BOTOCORE_VERSION names it), then the compact table the emulator
# embeds (internal/awslocal/apimodel/operations.json.gz) regenerated from them;
# TestTableCurrent checks it is current. Run by hand (CI has no botocore); output committed.
.PHONY: apimodels
apimodels:
	sh internal/awslocal/testdata/apimodels/extract.sh
	go test ./internal/awslocal/apimodel -run TestTableCurrent -update
	go test ./internal/awslocal -run TestServedOperationsTable -update

# corpora: the differential corpora of testdata/corpora (docs/make.md): the fixture templates
# of cfn-lint and the SAM translator's inputs, extracted from snapshots of their repositories
# (CFNLINT_SRC, SAM_SRC: git directories, bare or not; CI has no network, so this is run by
# hand and its output committed), with their licences and PINNED commits; then what the
# installed cfn-lint and aws-sam-translator say of each template (verdicts.json), which
# internal/template's TestCorpora compares cairn's verdicts with. `make corpora-verdicts`
# rewrites the verdicts alone (after upgrading cfn-lint, or on a new day for its runtime rules).
CFNLINT_SRC ?= /work/.mirror/aws-cloudformation+cfn-lint/repo
SAM_SRC     ?= /work/.mirror/aws+serverless-application-model/repo
.PHONY: corpora corpora-verdicts
corpora:
	sh testdata/corpora/extract.sh cfn-lint $(CFNLINT_SRC)
	sh testdata/corpora/extract.sh sam-translator $(SAM_SRC)
	$(MAKE) corpora-verdicts

corpora-verdicts:
	python3 testdata/corpora/verdicts.py cfn-lint
	python3 testdata/corpora/verdicts.py sam-translator
