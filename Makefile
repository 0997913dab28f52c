# The two commands a newcomer needs:
#   make run    install missing Debian packages, build, run the default scenario
#   make test   install, build, run every test that needs no GPU
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
KVSIM = $(BUILD)/bin/kvsim

.PHONY: all deps configure build run test test-gpu bench screenshots clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(KVSIM) run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE "gpu|bench"

# GPU tests skip (reported as skipped) where no CUDA device exists.
test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

bench: build
	cd $(BUILD) && ctest --output-on-failure -L bench -V

screenshots: build
	bash scripts/screenshots.sh $(BUILD)

clean:
	rm -rf $(BUILD)
