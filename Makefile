# SecurePIN — the two commands a newcomer needs:
#   make run    build and run the end-to-end demo
#   make test   everything green (includes a short form of the audit and a fuzz smoke)
# and, on demand: make bench, make bench-kdf, make bench-server, make stress, make audit, make fuzz,
# make format, make docs (the DocC site), make install PREFIX=... (binary, man page, completions).

SHELL       := /bin/bash
SWIFT       ?= swift
CC          := $(shell command -v clang 2>/dev/null || command -v cc)
BUILD_DIR   ?= .build
# Two audited C targets: the core (CSecureCore: libsodium, libargon2) and the protocol primitives
# built on it (CProtocolCrypto: the only one that links OpenSSL libcrypto).
CORE_SRCS   := $(wildcard CSecureCore/*.c)
CORE_HDRS   := CSecureCore/include/secure_core.h CSecureCore/internal.h
PROTO_SRCS  := $(wildcard CProtocolCrypto/*.c)
PROTO_HDRS  := CProtocolCrypto/include/protocol_crypto.h
# The post-quantum target (CPostQuantum: ML-KEM and ML-DSA, its own Keccak; links libsodium only).
PQ_SRCS     := $(wildcard CPostQuantum/*.c)
PQ_HDRS     := CPostQuantum/include/post_quantum.h CPostQuantum/pq_internal.h
# Its known-answer files and the Python `cryptography` of its differential tests (see test-pq).
PQ_PY_DIR           := $(BUILD_DIR)/pq-python
PQ_KAT_DIR          := $(BUILD_DIR)/pq-kat
PQ_PYTHON           := $(PQ_PY_DIR)/bin/python3
# Made once cryptography is installed, so that an interrupted install is redone.
PQ_PY_READY          = $(PQ_PY_DIR)/.cryptography-$(PQ_CRYPTOGRAPHY)
PQ_CRYPTOGRAPHY     ?= 50.0.2
PQ_KAT_FILES        := MLKEM/kat_MLKEM_768.rsp MLKEM/kat_MLKEM_1024.rsp MLDSA/kat_MLDSA_65_det_pure.rsp \
                       MLDSA/kat_MLDSA_87_det_pure.rsp
# The TPM binding (CTPMBinding: ESYS from libtss2), tested against swtpm by the Swift tests.
TPM_SRCS    := $(wildcard Sources/CTPMBinding/*.c)
TPM_HDRS    := Sources/CTPMBinding/include/tpm_binding.h
C_TEST_DIR  := $(BUILD_DIR)/c-tests
# Deferred (=): pkg-config must run after `deps` has installed the -dev packages, not when make reads this file.
# DWARF 4: valgrind 3.19 (Debian 12) cannot read clang's default DWARF 5 and gives up.
CFLAGS_CORE  = -std=c11 -Wall -Wextra -Werror -gdwarf-4 -ICSecureCore/include -ICSecureCore -ICSecureCore/tests \
               $(shell pkg-config --cflags libsodium libargon2 2>/dev/null)
LIBS_CORE    = $(shell pkg-config --libs libsodium libargon2 2>/dev/null)
# The protocol target's tests link both targets' sources, and libcrypto.
CFLAGS_PROTO = $(CFLAGS_CORE) -ICProtocolCrypto/include $(shell pkg-config --cflags libcrypto 2>/dev/null)
LIBS_PROTO   = $(LIBS_CORE) $(shell pkg-config --libs libcrypto 2>/dev/null)
CFLAGS_PQ    = -std=c11 -Wall -Wextra -Werror -gdwarf-4 -ICPostQuantum/include -ICPostQuantum -ICSecureCore/tests \
               $(shell pkg-config --cflags libsodium 2>/dev/null)
LIBS_PQ      = $(shell pkg-config --libs libsodium 2>/dev/null)
# ld.lld keeps the sanitizer runtimes' link quiet.
SAN_FLAGS   := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
               $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld)

# Debian packages the build and the tests need.
APT_PACKAGES := pkg-config libsodium-dev libargon2-dev argon2 libssl-dev util-linux tmux \
                libmicrohttpd-dev libsqlite3-dev valgrind binutils e2fsprogs mount curl jq groff-base \
                libtss2-dev swtpm swtpm-tools tpm2-tools python3 python3-venv python3-pip \
                libsecret-1-dev dbus gnome-keyring libsecret-tools libpq-dev postgresql-15 \
                libcurl4-openssl-dev nginx

.SHELLFLAGS := -o pipefail -ec
# A crashing test process prints its backtrace and exits: no waiting for a debugger to attach, and
# no full symbolication (which took 14 minutes on one crash of a large test binary).
export SWIFT_BACKTRACE ?= enable=yes,interactive=no,symbolicate=fast
.PHONY: run test deps build test-c test-swift test-cli test-interop test-deploy pyenv test-keyring test-postgres lint bench bench-kdf bench-server stress audit audit-quick \
        audit-c audit-valgrind audit-ctgrind audit-coverage audit-hardening audit-hardening-release audit-wipes audit-modules \
        audit-sloc \
        fuzz fuzz-smoke fuzz-build format clean docs docs-check install test-pq

run: deps build
	$(BUILD_DIR)/debug/securepin doctor
	$(BUILD_DIR)/debug/securepin demo

test: deps lint test-c test-swift test-postgres test-cli test-keyring test-pq test-interop test-deploy docs-check audit-quick \
      fuzz-smoke
	@c=$$(cat $(BUILD_DIR)/test-logs/*.log | sed -n 's/.*: \([0-9]*\) passed, 0 failed$$/\1/p' | awk '{s+=$$1} END {print s+0}'); \
	s=$$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} in .* passed.*/\1/p' $(BUILD_DIR)/test-logs/swift.log); \
	echo "make test: C and CLI checks $$c, Swift tests $$s"; \
	echo "$$((c + s)) passed, 0 failed"

## deps: install missing Debian packages (apt-get as root, sudo otherwise).
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	  elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; \
	  else echo "error: missing Debian packages:$$missing (run as root or install sudo)" >&2; exit 1; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || \
	    { echo "error: apt-get could not install:$$missing" >&2; exit 1; }; \
	fi

build: deps
	$(SWIFT) build --build-tests

## test-c: the C targets' own tests, plain and under ASan+UBSan, with and without secret memory.
## The core's (CSecureCore/tests) link no libcrypto; test_protocol (CProtocolCrypto/tests) links both targets.
C_TESTS     := core crypto whitebox protocol v4 faults threads
# test_threads drives the pool from several threads at once; also built with ThreadSanitizer.
# The toolchain's ThreadSanitizer runtime intercepts libdispatch, so it links the toolchain's copy.
SWIFT_LIBS  := $(abspath $(dir $(realpath $(CC)))../lib/swift/linux)
TSAN_FLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=thread $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld) \
               -L$(SWIFT_LIBS) -Wl,-rpath,$(SWIFT_LIBS) -ldispatch -lBlocksRuntime
# test_faults makes each fallible step fail in turn through the seam in internal.h (tests only).
$(C_TEST_DIR)/test_faults $(C_TEST_DIR)/test_faults_san: TEST_DEFS := -DSPC_FAULT_INJECTION

test-c: deps $(foreach t,$(C_TESTS) pq,$(C_TEST_DIR)/test_$(t) $(C_TEST_DIR)/test_$(t)_san) $(C_TEST_DIR)/test_threads_tsan \
        $(PQ_KAT_DIR)/.fetched
	@mkdir -p $(BUILD_DIR)/test-logs
	$(C_TEST_DIR)/test_whitebox | tee $(BUILD_DIR)/test-logs/c-whitebox.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_whitebox_san | tee $(BUILD_DIR)/test-logs/c-whitebox-san.log
	$(C_TEST_DIR)/test_crypto | tee $(BUILD_DIR)/test-logs/c-crypto.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_crypto_san | tee $(BUILD_DIR)/test-logs/c-crypto-san.log
	$(C_TEST_DIR)/test_protocol | tee $(BUILD_DIR)/test-logs/c-protocol.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_protocol_san | tee $(BUILD_DIR)/test-logs/c-protocol-san.log
	$(C_TEST_DIR)/test_v4 | tee $(BUILD_DIR)/test-logs/c-protocol-v4.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_v4_san | tee $(BUILD_DIR)/test-logs/c-protocol-v4-san.log
	$(C_TEST_DIR)/test_faults | tee $(BUILD_DIR)/test-logs/c-faults.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_faults_san | tee $(BUILD_DIR)/test-logs/c-faults-san.log
	$(C_TEST_DIR)/test_core | tee $(BUILD_DIR)/test-logs/c-plain.log
	$(C_TEST_DIR)/test_core --no-secretmem | tee $(BUILD_DIR)/test-logs/c-plain-nosecretmem.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_core_san | tee $(BUILD_DIR)/test-logs/c-san.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_core_san --no-secretmem | tee $(BUILD_DIR)/test-logs/c-san-nosecretmem.log
	$(C_TEST_DIR)/test_threads | tee $(BUILD_DIR)/test-logs/c-threads.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_threads_san | tee $(BUILD_DIR)/test-logs/c-threads-san.log
	TSAN_OPTIONS=halt_on_error=1 $(C_TEST_DIR)/test_threads_tsan | tee $(BUILD_DIR)/test-logs/c-threads-tsan.log
	$(C_TEST_DIR)/test_pq $(PQ_KAT_DIR) | tee $(BUILD_DIR)/test-logs/c-pq.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_pq_san $(PQ_KAT_DIR) | tee $(BUILD_DIR)/test-logs/c-pq-san.log
	@if pkg-config --atleast-version=3.5 libcrypto 2>/dev/null; then \
	  $(CC) $(CFLAGS_PQ) -O2 -DPQ_BACKEND_OPENSSL $$(pkg-config --cflags libcrypto) $(PQ_SRCS) CPostQuantum/tests/test_pq.c \
	    $(LIBS_PQ) $$(pkg-config --libs libcrypto) -o $(C_TEST_DIR)/test_pq_openssl && \
	  $(C_TEST_DIR)/test_pq_openssl $(PQ_KAT_DIR) | sed 's/^c-pq:/c-pq (OpenSSL backend):/' \
	    | tee $(BUILD_DIR)/test-logs/c-pq-openssl.log; \
	else echo "CPostQuantum's OpenSSL backend: not built or tested (libcrypto $$(pkg-config --modversion libcrypto) < 3.5)"; fi

# The white-box test includes password.c itself, so it links the other sources only.
$(C_TEST_DIR)/test_whitebox: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_whitebox.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) -O2 $(filter-out CSecureCore/password.c,$(CORE_SRCS)) CSecureCore/tests/test_whitebox.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_whitebox_san: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_whitebox.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(SAN_FLAGS) $(filter-out CSecureCore/password.c,$(CORE_SRCS)) CSecureCore/tests/test_whitebox.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_%: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_%.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(TEST_DEFS) $(CORE_SRCS) CSecureCore/tests/test_$*.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_%_san: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_%.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(SAN_FLAGS) $(TEST_DEFS) $(CORE_SRCS) CSecureCore/tests/test_$*.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_threads_tsan: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_threads.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(TSAN_FLAGS) $(CORE_SRCS) CSecureCore/tests/test_threads.c $(LIBS_CORE) -o $@

PROTO_TEST_DEPS := $(CORE_SRCS) $(CORE_HDRS) $(PROTO_SRCS) $(PROTO_HDRS) CProtocolCrypto/tests/test_protocol.c \
                   CSecureCore/tests/check.h

$(C_TEST_DIR)/test_protocol: $(PROTO_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PROTO) -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(CORE_SRCS) $(PROTO_SRCS) \
	  CProtocolCrypto/tests/test_protocol.c $(LIBS_PROTO) -o $@

$(C_TEST_DIR)/test_protocol_san: $(PROTO_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PROTO) $(SAN_FLAGS) $(CORE_SRCS) $(PROTO_SRCS) CProtocolCrypto/tests/test_protocol.c $(LIBS_PROTO) -o $@

# The PowerAuth V4 primitives (v4.c) against upstream's V4 vector files (Tests/Vectors/powerauth/v4).
V4_TEST_DEPS := $(CORE_SRCS) $(CORE_HDRS) $(PROTO_SRCS) $(PROTO_HDRS) CProtocolCrypto/tests/test_v4.c \
                CSecureCore/tests/check.h

$(C_TEST_DIR)/test_v4: $(V4_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PROTO) -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(CORE_SRCS) $(PROTO_SRCS) \
	  CProtocolCrypto/tests/test_v4.c $(LIBS_PROTO) -o $@

$(C_TEST_DIR)/test_v4_san: $(V4_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PROTO) $(SAN_FLAGS) $(CORE_SRCS) $(PROTO_SRCS) CProtocolCrypto/tests/test_v4.c $(LIBS_PROTO) -o $@

# CPostQuantum's tests link its sources and libsodium only. With the known-answer directory as
# argument they also run every case of the four NIST files below.
PQ_TEST_DEPS := $(PQ_SRCS) $(PQ_HDRS) CPostQuantum/tests/test_pq.c CSecureCore/tests/check.h

$(C_TEST_DIR)/test_pq: $(PQ_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PQ) -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(PQ_SRCS) CPostQuantum/tests/test_pq.c $(LIBS_PQ) -o $@

$(C_TEST_DIR)/test_pq_san: $(PQ_TEST_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PQ) $(SAN_FLAGS) $(PQ_SRCS) CPostQuantum/tests/test_pq.c $(LIBS_PQ) -o $@

## The NIST known answers for ML-KEM and ML-DSA (every case of four .rsp files) and Python's
## `cryptography` (OpenSSL 3.5+ inside its wheel) for the differential tests: both from PyPI at
## test time, into the build folder, in a virtual environment of their own. Never committed.

$(PQ_PY_READY):
	python3 -m venv $(PQ_PY_DIR)
	$(PQ_PY_DIR)/bin/pip install -q --disable-pip-version-check cryptography==$(PQ_CRYPTOGRAPHY)
	@touch $@

$(PQ_KAT_DIR)/.fetched: | $(PQ_PY_READY)
	@mkdir -p $(PQ_KAT_DIR)/wheel
	$(PQ_PY_DIR)/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
	  -d $(PQ_KAT_DIR)/wheel cryptography-vectors==$(PQ_CRYPTOGRAPHY)
	$(PQ_PYTHON) -c 'import sys, zipfile, pathlib; z = zipfile.ZipFile(next(pathlib.Path(sys.argv[1]).glob("*.whl"))); \
	  [pathlib.Path(sys.argv[2], pathlib.Path(n).name).write_bytes(z.read("cryptography_vectors/asymmetric/" + n)) for n in sys.argv[3:]]' \
	  $(PQ_KAT_DIR)/wheel $(PQ_KAT_DIR) $(PQ_KAT_FILES)
	rm -rf $(PQ_KAT_DIR)/wheel
	@touch $@

## test-pq: `securepin pq` against Python's `cryptography` (ML-KEM-768/1024, ML-DSA-65/87), on
## PQ_DIFF_SEEDS random seeds per parameter set, one long-running securepin process fed JSON lines;
## and the PowerAuth ML-KEM-768 decapsulation vectors of ../shared/vectors/powerauth/v4.
PQ_DIFF_SEEDS ?= 1000
test-pq: deps $(PQ_PY_READY)
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --product securepin
	$(PQ_PYTHON) Tests/pq/interop.py --securepin $(BUILD_DIR)/debug/securepin --seeds $(PQ_DIFF_SEEDS) \
	  | tee $(BUILD_DIR)/test-logs/pq-interop.log

## test-swift: every Swift suite; the server suites run on SQLite and on a throw-away PostgreSQL
## cluster (Tests/postgres/cluster.sh: initdb + pg_ctl in $(PG_DIR)/swift, socket only, run as
## `nobody` when make runs as root), stopped and removed on exit, also on failure.
PG_DIR := $(BUILD_DIR)/postgres
test-swift: deps
	@mkdir -p $(BUILD_DIR)/test-logs $(PG_DIR)
	$(SWIFT) build --build-tests
	trap 'Tests/postgres/cluster.sh stop $(PG_DIR)/swift' EXIT; \
	Tests/postgres/cluster.sh start $(PG_DIR)/swift; \
	SECUREPIN_TEST_POSTGRES_DSN="$$(cat $(PG_DIR)/swift/dsn)" $(SWIFT) test 2>&1 | tee $(BUILD_DIR)/test-logs/swift.log

## test-postgres: three `securepin server` instances on one PostgreSQL database (MultiInstanceTests):
## 64 clients, kill -9 of an instance, a database restart mid-load; a cluster of its own.
test-postgres: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) Tests/postgres/multi-instance.sh $(BUILD_DIR) | tee $(BUILD_DIR)/test-logs/postgres-multi.log

## test-cli: the securepin command as a user runs it; then every console block of README.md (the
## end-to-end demo among them) run, with its output compared to what the README shows.
test-cli: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --product securepin
	Tests/cli/run.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/cli.log
	Tests/cli/readme.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/readme.log
	Tests/cli/spec.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/spec.log
	Tests/cli/client.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/client.log
	Tests/cli/server-v4.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/server-v4.log
	Tests/cli/server-v4-hybrid.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/server-v4-hybrid.log

## test-keyring: the activation store in a real Secret Service. Tests/keyring/run.sh starts a private
## session bus (dbus-run-session) and a throw-away gnome-keyring-daemon (data and runtime directories
## in $(BUILD_DIR)/keyring-test, unlocked with a test password on stdin), runs the ActivationKeyringTests
## suites with the keyring case on, drives securepin client --store keyring against securepin server
## (secret-tool search, no secret in any file), the keyring's biometry factor (V3.3, and V4 against a
## second EC_P384 server), the keychain names given as options, securepin vault --store keyring and
## vault migrate-store, client migrate-store, and a locked collection; it stops the daemon, the
## servers and the bus on exit.
test-keyring: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) Tests/keyring/run.sh $(BUILD_DIR) $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/keyring.log

## test-interop: SecurePIN against a PowerAuth V3 client and server written in Python from the upstream
## PowerAuth documents alone (Tests/interop/README.md), then against a PowerAuth V4 client written the
## same way (run4.sh: one `securepin server --algorithm` EC_P384, EC_P384_ML_L3, EC_P384_ML_L5 after
## the other in $(BUILD_DIR), each always stopped). The Python side runs in a venv under $(BUILD_DIR)/pyenv
## with `cryptography` (the test-pq version, whose wheel has ML-KEM and ML-DSA) and `pycryptodome`
## (a second KMAC-256 for the V4 self-test) from PyPI, created on first use. Last, flood.sh: key-request
## floods from many loopback addresses (stateless temporary keys, the per-address limit).
PYENV := $(BUILD_DIR)/pyenv
pyenv:
	@[ -x $(PYENV)/bin/python3 ] || python3 -m venv $(PYENV)
	@$(PYENV)/bin/python3 -c 'from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem' 2>/dev/null \
	  || $(PYENV)/bin/pip install -q --disable-pip-version-check cryptography==$(PQ_CRYPTOGRAPHY)
	@$(PYENV)/bin/python3 -c 'import Crypto.Hash.KMAC256' 2>/dev/null || $(PYENV)/bin/pip install -q pycryptodome

test-interop: deps pyenv
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --product securepin
	INTEROP_LOG_DIR=$(BUILD_DIR)/test-logs/interop \
	  Tests/interop/run.sh $(BUILD_DIR)/debug/securepin $(PYENV)/bin/python3 | tee $(BUILD_DIR)/test-logs/interop.log
	BUILD_DIR=$(BUILD_DIR) INTEROP_LOG_DIR=$(BUILD_DIR)/test-logs/interop \
	  Tests/interop/run4.sh $(BUILD_DIR)/debug/securepin $(PYENV)/bin/python3 | tee $(BUILD_DIR)/test-logs/interop4.log
	Tests/interop/flood.sh $(BUILD_DIR)/debug/securepin $(PYENV)/bin/python3 | tee $(BUILD_DIR)/test-logs/flood.log

## test-deploy: the deployment of docs/deployment.md, end to end (Tests/deploy/run.sh): nginx from
## Debian terminating TLS with a certificate from a throw-away CA, two `securepin server` instances on
## one PostgreSQL behind it, the client story over https with one instance killed mid-run, and the
## client's TLS strategies (CA file, pins, an expired certificate, no validation, plain http refused),
## then a storage key rotation with the instances stopped.
## Everything it starts is stopped.
test-deploy: deps pyenv
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --product securepin
	Tests/deploy/run.sh $(BUILD_DIR)/debug/securepin $(PYENV)/bin/python3 | tee $(BUILD_DIR)/test-logs/deploy.log

## docs: the DocC site of every public module, from the build's symbol graphs, with the articles
## (Sources/<Module>/<Module>.docc) whose code the DocSnippetTests target compiles and runs.
## Open $(BUILD_DIR)/docs/index.html through any static web server. Fails on any DocC warning.
DOCS_DIR ?= $(BUILD_DIR)/docs
docs: deps
	Tests/docs/snippets.sh
	SWIFT=$(SWIFT) Tests/docs/docc.sh $(DOCS_DIR)

## docs-check (part of make test): the same conversion without the static-site transform; any
## DocC warning in a public module, or an article block that is not its compiled snippet, fails.
docs-check: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	Tests/docs/snippets.sh | tee $(BUILD_DIR)/test-logs/docs-snippets.log
	SWIFT=$(SWIFT) Tests/docs/docc.sh $(BUILD_DIR)/docs-check --check | tee $(BUILD_DIR)/test-logs/docs-check.log

## install: the release binary, its man page and its bash, zsh and fish completions under PREFIX
## (default /usr/local; DESTDIR for staging). CONFIGURATION=debug installs the debug build.
PREFIX        ?= /usr/local
CONFIGURATION ?= release
install: deps
	$(SWIFT) build -c $(CONFIGURATION) --product securepin
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(BUILD_DIR)/$(CONFIGURATION)/securepin $(DESTDIR)$(PREFIX)/bin/securepin
	$(BUILD_DIR)/$(CONFIGURATION)/securepin man > $(DESTDIR)$(PREFIX)/share/man/man1/securepin.1
	$(BUILD_DIR)/$(CONFIGURATION)/securepin completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/securepin
	$(BUILD_DIR)/$(CONFIGURATION)/securepin completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_securepin
	$(BUILD_DIR)/$(CONFIGURATION)/securepin completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/securepin.fish
	chmod 0644 $(DESTDIR)$(PREFIX)/share/man/man1/securepin.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/securepin \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_securepin $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/securepin.fish
	@echo "installed securepin, securepin(1) and completions under $(DESTDIR)$(PREFIX)"

lint:
	swift-format lint --strict -r Sources Tests Benchmarks Package.swift

format:
	swift-format format -i -r Sources Tests Benchmarks Package.swift

## bench: speed figures, each beside a reference measured in the same run.
bench: deps $(BUILD_DIR)/bench/bench_pq $(PQ_PY_READY)
	$(SWIFT) build -c release --product securepin-bench
	$(BUILD_DIR)/release/securepin-bench memory
	$(BUILD_DIR)/release/securepin-bench vault
	$(SWIFT) build -c release --product activation-bench
	$(BUILD_DIR)/release/activation-bench
	$(PQ_PYTHON) Benchmarks/pq/bench.py $(BUILD_DIR)/bench/bench_pq

# ML-KEM and ML-DSA per second, with the flags of the Swift build's C targets (Package.swift).
$(BUILD_DIR)/bench/bench_pq: $(PQ_SRCS) $(PQ_HDRS) Benchmarks/pq/bench_pq.c
	@mkdir -p $(BUILD_DIR)/bench
	$(CC) $(CFLAGS_PQ) $(HARDEN_CFLAGS) -fstack-clash-protection $(PQ_SRCS) Benchmarks/pq/bench_pq.c $(LIBS_PQ) -o $@

## stress: the vault kill -9 harness with 500 trials each for unlock and PIN change (1,000 kills).
stress: deps
	$(SWIFT) build --build-tests
	SECUREPIN_KILL_TRIALS=500 $(SWIFT) test --filter CrashTests

## bench-kdf: Argon2id grid (API beside raw libsodium and libargon2, floor), calibrator accuracy;
## writes .build/bench/kdf.csv, kdf.json and kdf.svg.
bench-kdf: deps
	$(SWIFT) build -c release --product securepin-bench
	$(BUILD_DIR)/release/securepin-bench kdf --out $(BUILD_DIR)/bench

# ------------------------------------------------------------------------------------------------
# Audit of the C targets, CSecureCore and CProtocolCrypto (docs/security.md says what each part proves).
#   make audit        everything below, with the release build's hardening
#   make audit-quick  the same on the debug build: part of `make test`
# ------------------------------------------------------------------------------------------------

AUDIT_DIR        := $(BUILD_DIR)/audit
SWIFT_BUILD_PATH ?= .build
TOOLCHAIN_BIN    := $(dir $(realpath $(CC)))
LLVM_PROFDATA    := $(TOOLCHAIN_BIN)llvm-profdata
LLVM_COV         := $(TOOLCHAIN_BIN)llvm-cov
COVERAGE_MIN     ?= 95
SLOC_BUDGET      ?= 1500
PROTO_SLOC_BUDGET ?= 1335
# The TPM binding grew past its first 450 with the third security round's lockout authorisation
# (refuse an empty one, set a random one) and the PCR policy (trial session, policy session, digest
# check before the authorisation is used).
TPM_SLOC_BUDGET  ?= 600
# protocol.c on its own: what stays uncovered is mostly libcrypto's and libsodium's internal-failure
# handling, which no test can provoke without a fault seam in OpenSSL.
PROTO_COVERAGE_MIN ?= 93
PQ_SLOC_BUDGET   ?= 2500
PQ_COVERAGE_MIN  ?= 95
# memcheck: any invalid access, any leak except memory still reachable at exit (libcrypto's tables).
VALGRIND         := valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
                    --errors-for-leak-kinds=definite,indirect,possible
CTGRIND_SUPP     := CSecureCore/tests/ctgrind.supp
HARDEN_CFLAGS    := -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong

audit: audit-valgrind audit-ctgrind audit-coverage audit-hardening-release audit-wipes audit-modules audit-sloc

audit-quick: audit-valgrind audit-ctgrind audit-coverage audit-hardening audit-wipes audit-modules audit-sloc

## audit-valgrind: the C tests under valgrind memcheck, with and without secret memory.
audit-valgrind: deps $(foreach t,$(C_TESTS) pq,$(C_TEST_DIR)/test_$(t))
	@mkdir -p $(AUDIT_DIR) $(BUILD_DIR)/test-logs
	@for run in "core" "core --no-secretmem" "crypto" "protocol" "v4" "faults" "pq"; do \
	  set -- $$run; name=c-valgrind-$$1$${2:+-nosecretmem}; \
	  $(VALGRIND) --log-file=$(AUDIT_DIR)/$$name.txt $(C_TEST_DIR)/test_$$1 $${2:-} > $(BUILD_DIR)/test-logs/$$name.log \
	    || { cat $(BUILD_DIR)/test-logs/$$name.log $(AUDIT_DIR)/$$name.txt; exit 1; }; \
	  echo "valgrind memcheck, test_$$1 $${2:-}: $$(tail -n 1 $(BUILD_DIR)/test-logs/$$name.log);" \
	    "$$(grep -h 'ERROR SUMMARY' $(AUDIT_DIR)/$$name.txt | sed 's/^==[0-9]*== //' | sort -u | tr '\n' ' ')"; \
	done
	@if grep -q 'unhandled amd64-linux syscall: 447' $(AUDIT_DIR)/c-valgrind-core.txt; then \
	  echo "note: this valgrind does not implement memfd_secret (syscall 447): under it the pool fell back to"; \
	  echo "      locked anonymous memory in both runs. The secret-memory path is checked by the plain and ASan runs."; \
	fi

# Kept for habit: the former name of the valgrind run.
audit-c: audit-valgrind

## audit-ctgrind: secrets marked undefined; memcheck must see no branch or address depending on them,
## and must flag the deliberately variable-time comparison of the harness.
$(C_TEST_DIR)/ctgrind: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/ctgrind.c CSecureCore/tests/ctgrind.h CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(HARDEN_CFLAGS) -DSPC_CTGRIND $(CORE_SRCS) CSecureCore/tests/ctgrind.c $(LIBS_CORE) -o $@

# The protocol target's cases (knowledge-key unwrap, authentication-code comparison), same rules.
$(C_TEST_DIR)/ctgrind_protocol: $(CORE_SRCS) $(CORE_HDRS) $(PROTO_SRCS) $(PROTO_HDRS) \
    CProtocolCrypto/tests/ctgrind_protocol.c CSecureCore/tests/ctgrind.h CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PROTO) $(HARDEN_CFLAGS) -DSPC_CTGRIND $(CORE_SRCS) $(PROTO_SRCS) CProtocolCrypto/tests/ctgrind_protocol.c \
	  $(LIBS_PROTO) -o $@

# The post-quantum target's keygen, encapsulation, decapsulation and signing, same rules; and the
# same harness built with PQ_PLANTED_LEAK (an early-exit comparison in decapsulation), which must be flagged.
PQ_CTGRIND_DEPS := $(PQ_SRCS) $(PQ_HDRS) CPostQuantum/tests/ctgrind_pq.c CSecureCore/tests/check.h
$(C_TEST_DIR)/ctgrind_pq: $(PQ_CTGRIND_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PQ) $(HARDEN_CFLAGS) -DPQ_CTGRIND $(PQ_SRCS) CPostQuantum/tests/ctgrind_pq.c $(LIBS_PQ) -o $@

$(C_TEST_DIR)/ctgrind_pq_leaky: $(PQ_CTGRIND_DEPS)
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_PQ) $(HARDEN_CFLAGS) -DPQ_CTGRIND -DPQ_PLANTED_LEAK $(PQ_SRCS) CPostQuantum/tests/ctgrind_pq.c $(LIBS_PQ) -o $@

audit-ctgrind: deps $(C_TEST_DIR)/ctgrind $(C_TEST_DIR)/ctgrind_protocol $(C_TEST_DIR)/ctgrind_pq $(C_TEST_DIR)/ctgrind_pq_leaky
	@mkdir -p $(AUDIT_DIR) $(BUILD_DIR)/test-logs
	@awk '/^\{/ {n = 0; next} /^\}/ {next} !/^#/ && NF { if (++n == 3 && $$0 !~ /^ *(obj:\*\/lib(sodium|crypto)\.so\*|fun:(crypto|sodium)_)/) \
	  {print "ctgrind.supp: a suppression must start in libsodium or libcrypto, not: " $$0; bad = 1} } END {exit bad}' $(CTGRIND_SUPP)
	@valgrind --error-exitcode=1 --suppressions=$(CTGRIND_SUPP) --log-file=$(AUDIT_DIR)/ctgrind.txt \
	  $(C_TEST_DIR)/ctgrind > $(BUILD_DIR)/test-logs/c-ctgrind.log \
	  || { cat $(BUILD_DIR)/test-logs/c-ctgrind.log $(AUDIT_DIR)/ctgrind.txt; echo "ctgrind: secret-dependent branch or address (above)"; exit 1; }
	@echo "CSecureCore: $$(tail -n 1 $(BUILD_DIR)/test-logs/c-ctgrind.log); $$(grep -h 'ERROR SUMMARY' $(AUDIT_DIR)/ctgrind.txt | sed 's/^==[0-9]*== //')"
	@valgrind --error-exitcode=1 --suppressions=$(CTGRIND_SUPP) --log-file=$(AUDIT_DIR)/ctgrind-protocol.txt \
	  $(C_TEST_DIR)/ctgrind_protocol > $(BUILD_DIR)/test-logs/c-ctgrind-protocol.log \
	  || { cat $(BUILD_DIR)/test-logs/c-ctgrind-protocol.log $(AUDIT_DIR)/ctgrind-protocol.txt; \
	       echo "ctgrind: secret-dependent branch or address in the protocol target (above)"; exit 1; }
	@echo "CProtocolCrypto: $$(tail -n 1 $(BUILD_DIR)/test-logs/c-ctgrind-protocol.log);" \
	  "$$(grep -h 'ERROR SUMMARY' $(AUDIT_DIR)/ctgrind-protocol.txt | sed 's/^==[0-9]*== //')"
	@if valgrind --error-exitcode=1 --suppressions=$(CTGRIND_SUPP) --log-file=$(AUDIT_DIR)/ctgrind-leaky.txt \
	     $(C_TEST_DIR)/ctgrind --leaky > /dev/null; then \
	  echo "ctgrind: the deliberately variable-time comparison was NOT flagged: the check is blind" >&2; exit 1; fi
	@grep -A1 'Conditional jump or move depends on uninitialised value' $(AUDIT_DIR)/ctgrind-leaky.txt | grep -q 'at .*: leaky_equal (' \
	  || { echo "ctgrind: the leaky comparison failed for another reason:"; cat $(AUDIT_DIR)/ctgrind-leaky.txt; exit 1; }
	@echo "ctgrind: the deliberately variable-time comparison is flagged, as it must be" \
	  "($$(grep -c 'depends on uninitialised\|Use of uninitialised' $(AUDIT_DIR)/ctgrind-leaky.txt) reports in leaky_equal)"
	@valgrind --error-exitcode=1 --suppressions=$(CTGRIND_SUPP) --log-file=$(AUDIT_DIR)/ctgrind-pq.txt \
	  $(C_TEST_DIR)/ctgrind_pq > $(BUILD_DIR)/test-logs/c-ctgrind-pq.log \
	  || { cat $(BUILD_DIR)/test-logs/c-ctgrind-pq.log $(AUDIT_DIR)/ctgrind-pq.txt; \
	       echo "ctgrind: secret-dependent branch or address in the post-quantum target (above)"; exit 1; }
	@echo "CPostQuantum: $$(tail -n 1 $(BUILD_DIR)/test-logs/c-ctgrind-pq.log);" \
	  "$$(grep -h 'ERROR SUMMARY' $(AUDIT_DIR)/ctgrind-pq.txt | sed 's/^==[0-9]*== //')"
	@if valgrind --error-exitcode=1 --suppressions=$(CTGRIND_SUPP) --log-file=$(AUDIT_DIR)/ctgrind-pq-leaky.txt \
	     $(C_TEST_DIR)/ctgrind_pq_leaky > /dev/null; then \
	  echo "ctgrind: the planted leak in ML-KEM decapsulation was NOT flagged: the check is blind" >&2; exit 1; fi
	@grep -A1 'Conditional jump or move depends on uninitialised value' $(AUDIT_DIR)/ctgrind-pq-leaky.txt \
	  | grep -q 'at .*: planted_leak_differs (' \
	  || { echo "ctgrind: the planted leak failed for another reason:"; cat $(AUDIT_DIR)/ctgrind-pq-leaky.txt; exit 1; }
	@echo "ctgrind: the planted leak in ML-KEM decapsulation is flagged, as it must be" \
	  "($$(grep -c 'depends on uninitialised\|Use of uninitialised' $(AUDIT_DIR)/ctgrind-pq-leaky.txt) reports in planted_leak_differs)"

## audit-coverage: line coverage of each C target by the C tests (llvm-cov from the toolchain), one
## report and one minimum per target: CSecureCore/*.c over all the C tests (test_protocol exercises the
## core too), CProtocolCrypto/*.c over test_protocol and test_v4.
COV_DIR   := $(AUDIT_DIR)/coverage
COV_TESTS := core crypto protocol v4 faults
COV_FLAGS := -O0 -fprofile-instr-generate -fcoverage-mapping -DSPC_FAULT_INJECTION

$(COV_DIR)/test_%: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_%.c CSecureCore/tests/check.h
	@mkdir -p $(COV_DIR)
	$(CC) $(CFLAGS_CORE) $(COV_FLAGS) $(CORE_SRCS) CSecureCore/tests/test_$*.c $(LIBS_CORE) -o $@

$(COV_DIR)/test_protocol: $(PROTO_TEST_DEPS)
	@mkdir -p $(COV_DIR)
	$(CC) $(CFLAGS_PROTO) $(COV_FLAGS) $(CORE_SRCS) $(PROTO_SRCS) CProtocolCrypto/tests/test_protocol.c $(LIBS_PROTO) -o $@

$(COV_DIR)/test_v4: $(V4_TEST_DEPS)
	@mkdir -p $(COV_DIR)
	$(CC) $(CFLAGS_PROTO) $(COV_FLAGS) $(CORE_SRCS) $(PROTO_SRCS) CProtocolCrypto/tests/test_v4.c $(LIBS_PROTO) -o $@

$(COV_DIR)/test_pq: $(PQ_TEST_DEPS)
	@mkdir -p $(COV_DIR)
	$(CC) $(CFLAGS_PQ) $(COV_FLAGS) $(PQ_SRCS) CPostQuantum/tests/test_pq.c $(LIBS_PQ) -o $@

audit-coverage: deps $(foreach t,$(COV_TESTS) pq,$(COV_DIR)/test_$(t)) $(PQ_KAT_DIR)/.fetched
	@rm -f $(COV_DIR)/*.profraw
	@for run in "core" "core --no-secretmem" "crypto" "protocol" "v4" "faults"; do \
	  set -- $$run; LLVM_PROFILE_FILE=$(COV_DIR)/%p-%m.profraw $(COV_DIR)/test_$$1 $${2:-} > $(COV_DIR)/$$1.log \
	    || { cat $(COV_DIR)/$$1.log; exit 1; }; done
	@LLVM_PROFILE_FILE=$(COV_DIR)/pq-%p.profpq $(COV_DIR)/test_pq $(PQ_KAT_DIR) > $(COV_DIR)/pq.log \
	  || { cat $(COV_DIR)/pq.log; exit 1; }
	@$(LLVM_PROFDATA) merge -sparse $(COV_DIR)/*.profraw -o $(COV_DIR)/core.profdata
	@$(LLVM_PROFDATA) merge -sparse $(COV_DIR)/*.profpq -o $(COV_DIR)/pq.profdata && rm -f $(COV_DIR)/*.profpq
	@$(LLVM_COV) report $(COV_DIR)/test_pq -instr-profile=$(COV_DIR)/pq.profdata $(PQ_SRCS) \
	  | tee $(AUDIT_DIR)/coverage-pq.txt
	@$(LLVM_COV) report $(COV_DIR)/test_core $(foreach t,$(filter-out core,$(COV_TESTS)),-object $(COV_DIR)/test_$(t)) \
	  -instr-profile=$(COV_DIR)/core.profdata $(CORE_SRCS) | tee $(AUDIT_DIR)/coverage.txt
	@$(LLVM_COV) report $(COV_DIR)/test_protocol -object $(COV_DIR)/test_v4 -instr-profile=$(COV_DIR)/core.profdata $(PROTO_SRCS) \
	  | tee $(AUDIT_DIR)/coverage-protocol.txt
	@awk -v min=$(COVERAGE_MIN) '$$1 == "TOTAL" { pct = $$10; sub("%", "", pct); \
	  printf "CSecureCore line coverage: %s%% (minimum %s%%)\n", pct, min; exit (pct + 0 < min + 0) }' $(AUDIT_DIR)/coverage.txt
	@awk -v min=$(PROTO_COVERAGE_MIN) '$$1 == "TOTAL" { pct = $$10; sub("%", "", pct); \
	  printf "CProtocolCrypto line coverage: %s%% (minimum %s%%)\n", pct, min; exit (pct + 0 < min + 0) }' \
	  $(AUDIT_DIR)/coverage-protocol.txt
	@awk -v min=$(PQ_COVERAGE_MIN) '$$1 == "TOTAL" { pct = $$10; sub("%", "", pct); \
	  printf "CPostQuantum line coverage: %s%% (minimum %s%%)\n", pct, min; exit (pct + 0 < min + 0) }' \
	  $(AUDIT_DIR)/coverage-pq.txt

## audit-hardening: stack protector, FORTIFY_SOURCE, PIE, full RELRO and NX on the C objects and on securepin.
audit-hardening: deps
	$(SWIFT) build --product securepin
	Tests/Audit/check-hardening.sh $(SWIFT_BUILD_PATH) debug securepin

audit-hardening-release: deps
	$(SWIFT) build -c release --product securepin
	Tests/Audit/check-hardening.sh $(SWIFT_BUILD_PATH) release securepin

## audit-wipes: in the optimised securepin, the wipes of plain locals that held a secret are still
## calls (a plain `x = 0` before the end of scope is a dead store the optimiser deletes).
audit-wipes: deps
	$(SWIFT) build -c release --product securepin
	@mkdir -p $(BUILD_DIR)/test-logs
	Tests/Audit/check-wipes.sh $(SWIFT_BUILD_PATH)/release/securepin | tee $(BUILD_DIR)/test-logs/audit-wipes.log

## audit-modules: an app that imports PinEntry (the entry model) or PinStrength links no terminal
## driver and no signal handler: their dependency closures hold no PinEntryTerminal, and no object in
## them calls sigaction, tcsetattr, isatty or the like (a control run must find those in PinEntryTerminal).
audit-modules: deps
	$(SWIFT) build --product pinpad-demo
	@mkdir -p $(BUILD_DIR)/test-logs
	Tests/Audit/check-module-deps.sh $(SWIFT_BUILD_PATH)/debug | tee $(BUILD_DIR)/test-logs/audit-modules.log

## audit-sloc: size of each audited C target against its own budget (reported honestly, not a gate).
audit-sloc:
	@Tests/Audit/sloc.sh CSecureCore $(SLOC_BUDGET) $(CORE_SRCS) CSecureCore/internal.h CSecureCore/include/secure_core.h
	@Tests/Audit/sloc.sh CProtocolCrypto $(PROTO_SLOC_BUDGET) $(PROTO_SRCS) $(PROTO_HDRS)
	@Tests/Audit/sloc.sh CTPMBinding $(TPM_SLOC_BUDGET) $(TPM_SRCS) $(TPM_HDRS)
	@Tests/Audit/sloc.sh CPostQuantum $(PQ_SLOC_BUDGET) $(PQ_SRCS) $(PQ_HDRS)

# ------------------------------------------------------------------------------------------------
# Fuzzing with libFuzzer from the toolchain. C targets: clang -fsanitize=fuzzer,address,undefined.
# Swift parsers: the modules they need are compiled with swiftc -sanitize=fuzzer,address outside
# SwiftPM (which cannot build a libFuzzer binary), then linked with the target's entry point.
#   make fuzz         each target FUZZ_SECONDS (default 180) on its corpus in Tests/Fuzz/corpus/
#   make fuzz-smoke   each target FUZZ_SMOKE_SECONDS (default 5): part of `make test`
# New inputs go to $(BUILD_DIR)/fuzz/corpus/<target>; crashes to $(BUILD_DIR)/fuzz/.
# ------------------------------------------------------------------------------------------------

FUZZ_DIR           := $(BUILD_DIR)/fuzz
FUZZ_SECONDS       ?= 180
FUZZ_SMOKE_SECONDS ?= 5
SWIFTC             ?= swiftc
FUZZ_C_TARGETS     := utf8_password mlkem_decaps mldsa_verify
FUZZ_SWIFT_TARGETS := vault_file status_blob authorization_header algorithm_name configuration_string \
                      activation_code server_request
FUZZ_TARGETS       := $(FUZZ_C_TARGETS) $(FUZZ_SWIFT_TARGETS)
FUZZ_CFLAGS        := -std=c11 -Wall -Wextra -Werror -g -O1 -ICSecureCore/include -ICSecureCore
FUZZ_SWIFTFLAGS    := -parse-as-library -sanitize=fuzzer,address -Onone -gline-tables-only -package-name SecurePIN \
                      -I $(FUZZ_DIR) -Xcc -fmodule-map-file=$(FUZZ_DIR)/module.modulemap -Xcc -ICSecureCore/include
# SecureCore imports both C targets, so the Swift fuzzers link both, and libcrypto.
FUZZ_LINK           = $(if $(shell command -v ld.lld 2>/dev/null),-use-ld=lld) $(LIBS_PROTO)
SECURECORE_SWIFT   := $(shell find Sources/SecureCore -name '*.swift')
PROTOCOL_SWIFT     := $(shell find Sources/PowerAuthProtocol -name '*.swift')
PINVAULT_SWIFT     := $(shell find Sources/PinVault -name '*.swift')
DURABLESTORAGE_SWIFT := $(shell find Sources/DurableStorage -name '*.swift')
BIOMETRY_SWIFT     := $(shell find Sources/Biometry -name '*.swift')
POSTQUANTUM_SWIFT  := $(shell find Sources/PostQuantum -name '*.swift')
FUZZ_CORE_OBJS     := $(patsubst CSecureCore/%.c,$(FUZZ_DIR)/core/%.o,$(CORE_SRCS))
FUZZ_PROTO_OBJS    := $(patsubst CProtocolCrypto/%.c,$(FUZZ_DIR)/protocol/%.o,$(PROTO_SRCS))
FUZZ_PQ_OBJS       := $(patsubst CPostQuantum/%.c,$(FUZZ_DIR)/pq/%.o,$(PQ_SRCS))
# The Swift target each fuzzer's entry point lives in, and the module objects it links.
fuzz_swift_file     = Tests/Fuzz/$(subst $(eval) ,,$(foreach w,$(subst _, ,$(1)),$(shell echo $(w) | sed 's/./\U&/')))Fuzz.swift
FUZZ_MODULES_vault_file           := SecureCore Biometry DurableStorage PinVault
FUZZ_MODULES_status_blob          := SecureCore PostQuantum PowerAuthProtocol
FUZZ_MODULES_authorization_header := SecureCore PostQuantum PowerAuthProtocol
FUZZ_MODULES_algorithm_name       := SecureCore PostQuantum PowerAuthProtocol
FUZZ_MODULES_configuration_string := SecureCore PostQuantum PowerAuthProtocol
FUZZ_MODULES_activation_code      := SecureCore PostQuantum PowerAuthProtocol
FUZZ_MODULES_server_request       := SecureCore PostQuantum PowerAuthProtocol ActivationServer

$(FUZZ_DIR)/module.modulemap: Makefile
	@mkdir -p $(FUZZ_DIR)
	printf 'module CSecureCore {\n    header "%s"\n    export *\n}\nmodule CProtocolCrypto {\n    header "%s"\n    export *\n}\nmodule CPostQuantum {\n    header "%s"\n    export *\n}\n' \
	  "$(CURDIR)/CSecureCore/include/secure_core.h" "$(CURDIR)/CProtocolCrypto/include/protocol_crypto.h" \
	  "$(CURDIR)/CPostQuantum/include/post_quantum.h" > $@

$(FUZZ_DIR)/core/%.o: CSecureCore/%.c $(CORE_HDRS)
	@mkdir -p $(FUZZ_DIR)/core
	$(CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address $(shell pkg-config --cflags libsodium libargon2 2>/dev/null) -c $< -o $@

$(FUZZ_DIR)/protocol/%.o: CProtocolCrypto/%.c $(PROTO_HDRS) $(CORE_HDRS)
	@mkdir -p $(FUZZ_DIR)/protocol
	$(CC) $(FUZZ_CFLAGS) -ICProtocolCrypto/include -fsanitize=fuzzer-no-link,address \
	  $(shell pkg-config --cflags libsodium libcrypto 2>/dev/null) -c $< -o $@

$(FUZZ_DIR)/SecureCore.o: $(SECURECORE_SWIFT) $(FUZZ_DIR)/module.modulemap $(CORE_HDRS) $(PROTO_HDRS)
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name SecureCore -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/SecureCore.swiftmodule $(SECURECORE_SWIFT) -o $@

$(FUZZ_DIR)/Biometry.o: $(BIOMETRY_SWIFT) $(FUZZ_DIR)/SecureCore.o
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name Biometry -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/Biometry.swiftmodule $(BIOMETRY_SWIFT) -o $@

# The protocol module imports only SecureCore and PostQuantum: not Biometry, not PinVault and
# not the client module; every fuzz target parses protocol input only.
$(FUZZ_DIR)/PowerAuthProtocol.o: $(PROTOCOL_SWIFT) $(FUZZ_DIR)/SecureCore.o $(FUZZ_DIR)/PostQuantum.o
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name PowerAuthProtocol -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/PowerAuthProtocol.swiftmodule $(PROTOCOL_SWIFT) -o $@

ACTIVATIONSERVER_SWIFT := $(shell find Sources/ActivationServer -name '*.swift')
$(FUZZ_DIR)/ActivationServer.o: $(ACTIVATIONSERVER_SWIFT) $(FUZZ_DIR)/PowerAuthProtocol.o
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name ActivationServer -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/ActivationServer.swiftmodule $(ACTIVATIONSERVER_SWIFT) -o $@

$(FUZZ_DIR)/pq/%.o: CPostQuantum/%.c $(PQ_HDRS)
	@mkdir -p $(FUZZ_DIR)/pq
	$(CC) $(FUZZ_CFLAGS) -ICPostQuantum/include -ICPostQuantum -fsanitize=fuzzer-no-link,address \
	  $(shell pkg-config --cflags libsodium 2>/dev/null) -c $< -o $@

# ML-KEM and ML-DSA for Swift: the protocol module's hybrid suites use them.
$(FUZZ_DIR)/PostQuantum.o: $(POSTQUANTUM_SWIFT) $(FUZZ_DIR)/SecureCore.o
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name PostQuantum -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/PostQuantum.swiftmodule $(POSTQUANTUM_SWIFT) -o $@

# The vault's files go through the storage module, which imports no other module.
$(FUZZ_DIR)/DurableStorage.o: $(DURABLESTORAGE_SWIFT)
	@mkdir -p $(FUZZ_DIR)
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -module-name DurableStorage -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/DurableStorage.swiftmodule $(DURABLESTORAGE_SWIFT) -o $@

# -enable-testing: the vault reader is internal to PinVault; the target uses @testable import.
$(FUZZ_DIR)/PinVault.o: $(PINVAULT_SWIFT) $(FUZZ_DIR)/SecureCore.o $(FUZZ_DIR)/Biometry.o $(FUZZ_DIR)/DurableStorage.o
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) -enable-testing -module-name PinVault -wmo -c -emit-module \
	  -emit-module-path $(FUZZ_DIR)/PinVault.swiftmodule $(PINVAULT_SWIFT) -o $@

$(FUZZ_DIR)/fuzz_utf8_password: Tests/Fuzz/fuzz_utf8_password.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(FUZZ_DIR)
	$(CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld) $(shell pkg-config --cflags libsodium libargon2 2>/dev/null) \
	  $(CORE_SRCS) $< $(LIBS_CORE) -o $@

# Post-quantum decapsulation and verification on malformed keys, ciphertexts and signatures.
$(FUZZ_DIR)/fuzz_mlkem_decaps $(FUZZ_DIR)/fuzz_mldsa_verify: $(FUZZ_DIR)/fuzz_%: Tests/Fuzz/fuzz_%.c $(PQ_SRCS) $(PQ_HDRS)
	@mkdir -p $(FUZZ_DIR)
	$(CC) $(FUZZ_CFLAGS) -ICPostQuantum/include -ICPostQuantum -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld) $(shell pkg-config --cflags libsodium 2>/dev/null) \
	  $(PQ_SRCS) $< $(LIBS_PQ) -o $@

.SECONDEXPANSION:
$(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_SWIFT_TARGETS)): $(FUZZ_DIR)/fuzz_%: $$(call fuzz_swift_file,$$*) \
    $$(foreach m,$$(FUZZ_MODULES_$$*),$(FUZZ_DIR)/$$(m).o) $(FUZZ_CORE_OBJS) $(FUZZ_PROTO_OBJS) $(FUZZ_PQ_OBJS)
	$(SWIFTC) $(FUZZ_SWIFTFLAGS) $(call fuzz_swift_file,$*) $(foreach m,$(FUZZ_MODULES_$*),$(FUZZ_DIR)/$(m).o) \
	  $(FUZZ_CORE_OBJS) $(FUZZ_PROTO_OBJS) $(FUZZ_PQ_OBJS) $(FUZZ_LINK) -o $@

fuzz-build: deps $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

# Run each target for $(1) seconds; print its executions; fail on any crash, leak or timeout.
define fuzz_run
@for t in $(FUZZ_TARGETS); do \
  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
  SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1 $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(1) -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/$$t- \
    $(FUZZ_DIR)/corpus/$$t Tests/Fuzz/corpus/$$t > $(FUZZ_DIR)/$$t.log 2>&1 \
    || { tail -n 60 $(FUZZ_DIR)/$$t.log; echo "fuzz $$t: FAILED (input saved under $(FUZZ_DIR)/$$t-*)"; exit 1; }; \
  printf 'fuzz %-22s %10s executions in %ss, corpus %s inputs\n' $$t \
    "$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/$$t.log)" $(1) \
    "$$(ls $(FUZZ_DIR)/corpus/$$t Tests/Fuzz/corpus/$$t | grep -vc ':$$\|^$$')"; \
done
endef

fuzz: fuzz-build
	$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-smoke: fuzz-build
	$(call fuzz_run,$(FUZZ_SMOKE_SECONDS))
## bench-server: authenticated requests per second, p50/p99/max latency and the audit-count check of
## the reference server on loopback: SQLite, and PostgreSQL with one and with two instances (a
## throw-away cluster in $(PG_DIR)/bench, stopped and removed on exit), side by side. Every instance
## is a release `securepin server` process; the bench process is the load generator (keep-alive
## connections writing pre-built requests; --urlsession for the client transport instead), and the
## CPU time of each side is reported. BENCH_SERVER_ARGS="--json" for machines (only the JSON goes to
## standard output: `make -s bench-server BENCH_SERVER_ARGS=--json > bench.json`); --clients N, --requests N;
## --algorithm NAME (repeatable; default LEGACY_P256 and EC_P384_ML_L3 side by side, with their ratio).
bench-server: deps
	@$(SWIFT) build -c release --product securepin-bench >&2
	@$(SWIFT) build -c release --product securepin >&2
	@mkdir -p $(PG_DIR)
	@trap 'Tests/postgres/cluster.sh stop $(PG_DIR)/bench' EXIT; \
	Tests/postgres/cluster.sh start $(PG_DIR)/bench >&2; \
	$(BUILD_DIR)/release/securepin-bench server --postgres $(PG_DIR)/bench/dsn \
	  --securepin $(BUILD_DIR)/release/securepin $(BENCH_SERVER_ARGS)


clean:
	rm -rf $(BUILD_DIR)
