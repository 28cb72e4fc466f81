# SecurePIN — the two commands a newcomer needs:
#   make run    build and run the end-to-end demo
#   make test   everything green
# and, on demand: make bench, make bench-server, make audit-c, make format.

SHELL       := /bin/bash
SWIFT       ?= swift
CC          := $(shell command -v clang 2>/dev/null || command -v cc)
BUILD_DIR   ?= .build
CORE_SRCS   := $(wildcard CSecureCore/*.c)
CORE_HDRS   := CSecureCore/include/secure_core.h CSecureCore/internal.h
C_TEST_DIR  := $(BUILD_DIR)/c-tests
CFLAGS_CORE := -std=c11 -Wall -Wextra -Werror -g -ICSecureCore/include -ICSecureCore \
               $(shell pkg-config --cflags libsodium libargon2 libcrypto 2>/dev/null)
LIBS_CORE   := $(shell pkg-config --libs libsodium libargon2 libcrypto 2>/dev/null)
# ld.lld keeps the sanitizer runtimes' link quiet.
SAN_FLAGS   := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
               $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld)

# Debian packages the build and the tests need.
APT_PACKAGES := pkg-config libsodium-dev libargon2-dev argon2 libssl-dev util-linux tmux \
                libmicrohttpd-dev libsqlite3-dev

.SHELLFLAGS := -o pipefail -ec
.PHONY: run test deps build test-c test-swift test-cli lint bench bench-kdf bench-server stress audit-c format clean

run: deps build
	$(BUILD_DIR)/debug/securepin doctor
	$(BUILD_DIR)/debug/securepin demo

test: deps lint test-c test-swift test-cli
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

## test-c: the C core's own tests, plain and under ASan+UBSan, with and without secret memory.
C_TESTS     := core crypto whitebox

test-c: deps $(foreach t,$(C_TESTS),$(C_TEST_DIR)/test_$(t) $(C_TEST_DIR)/test_$(t)_san)
	@mkdir -p $(BUILD_DIR)/test-logs
	$(C_TEST_DIR)/test_whitebox | tee $(BUILD_DIR)/test-logs/c-whitebox.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_whitebox_san | tee $(BUILD_DIR)/test-logs/c-whitebox-san.log
	$(C_TEST_DIR)/test_crypto | tee $(BUILD_DIR)/test-logs/c-crypto.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_crypto_san | tee $(BUILD_DIR)/test-logs/c-crypto-san.log
	$(C_TEST_DIR)/test_core | tee $(BUILD_DIR)/test-logs/c-plain.log
	$(C_TEST_DIR)/test_core --no-secretmem | tee $(BUILD_DIR)/test-logs/c-plain-nosecretmem.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_core_san | tee $(BUILD_DIR)/test-logs/c-san.log
	ASAN_OPTIONS=detect_leaks=1 $(C_TEST_DIR)/test_core_san --no-secretmem | tee $(BUILD_DIR)/test-logs/c-san-nosecretmem.log

# The white-box test includes password.c itself, so it links the other sources only.
$(C_TEST_DIR)/test_whitebox: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_whitebox.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) -O2 $(filter-out CSecureCore/password.c,$(CORE_SRCS)) CSecureCore/tests/test_whitebox.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_whitebox_san: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_whitebox.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(SAN_FLAGS) $(filter-out CSecureCore/password.c,$(CORE_SRCS)) CSecureCore/tests/test_whitebox.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_%: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_%.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(CORE_SRCS) CSecureCore/tests/test_$*.c $(LIBS_CORE) -o $@

$(C_TEST_DIR)/test_%_san: $(CORE_SRCS) $(CORE_HDRS) CSecureCore/tests/test_%.c CSecureCore/tests/check.h
	@mkdir -p $(C_TEST_DIR)
	$(CC) $(CFLAGS_CORE) $(SAN_FLAGS) $(CORE_SRCS) CSecureCore/tests/test_$*.c $(LIBS_CORE) -o $@

test-swift: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --build-tests
	$(SWIFT) test 2>&1 | tee $(BUILD_DIR)/test-logs/swift.log

## test-cli: the securepin command as a user runs it, and the end-to-end demo.
test-cli: deps
	@mkdir -p $(BUILD_DIR)/test-logs
	$(SWIFT) build --product securepin
	Tests/cli/run.sh $(BUILD_DIR)/debug/securepin | tee $(BUILD_DIR)/test-logs/cli.log
	$(BUILD_DIR)/debug/securepin demo

lint:
	swift-format lint --strict -r Sources Tests Benchmarks Package.swift

format:
	swift-format format -i -r Sources Tests Benchmarks Package.swift

## bench: speed figures, each beside a reference measured in the same run.
bench: deps
	$(SWIFT) build -c release --product securepin-bench
	$(BUILD_DIR)/release/securepin-bench memory
	$(BUILD_DIR)/release/securepin-bench vault
	$(SWIFT) build -c release --product activation-bench
	$(BUILD_DIR)/release/activation-bench

## stress: the vault kill -9 harness with 500 trials each for unlock and PIN change (1,000 kills).
stress: deps
	$(SWIFT) build --build-tests
	SECUREPIN_KILL_TRIALS=500 $(SWIFT) test --filter CrashTests

## bench-kdf: Argon2id grid (API beside raw libsodium and libargon2, floor), calibrator accuracy;
## writes .build/bench/kdf.csv, kdf.json and kdf.svg.
bench-kdf: deps
	$(SWIFT) build -c release --product securepin-bench
	$(BUILD_DIR)/release/securepin-bench kdf --out $(BUILD_DIR)/bench

## bench-server: authenticated requests per second and p50/p99 latency of the reference server
## (HTTP + SQLite) on loopback, with the load generator in the same process.
bench-server: deps
	$(SWIFT) build -c release --product securepin-bench
	$(BUILD_DIR)/release/securepin-bench server $(BENCH_SERVER_ARGS)

## audit-c: the C core under valgrind memcheck (no leaks, no invalid access).
audit-c: deps $(C_TEST_DIR)/test_core
	@command -v valgrind >/dev/null || { echo "valgrind missing: apt-get install valgrind" >&2; exit 1; }
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite $(C_TEST_DIR)/test_core --no-secretmem

clean:
	rm -rf $(BUILD_DIR)
