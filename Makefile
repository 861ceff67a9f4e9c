# The two commands of the README: `make run` and `make test`. Both set everything up on a
# fresh machine: a virtual environment, the Python tools, and the project built by maturin.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install run test test-fast lint rust-test py-test compat-py5 bench bench-acl bench-grpc bench-ha bench-metrics bench-peers bench-push bench-scale bench-spark ha-crash-loop fuzz soak fault-loop clean compat-rust-client compat-table \
	compat-rocketmq-rust compat-servers browser

# Peer programs of the compatibility suite (tests/compat) built outside the workspace, in a
# cache that outlives clones of this repository (a fresh machine builds it once: ~6 min).
COMPAT_TARGET ?= $(HOME)/.cache/rocketpy/compat-target
export ROCKETPY_COMPAT_RUST_CLIENT := $(COMPAT_TARGET)/release/rocketpy-compat-rust-client
# rocketmq-rust's name server and broker (crates.io), for rocketpy's client to run against.
export ROCKETPY_ROCKETMQ_RUST ?= $(HOME)/.cache/rocketpy/rocketmq-rust

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.tools: pyproject.toml spark/pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --group dev
	# The Spark data source (spark/) with pyspark, pyarrow and pandas. "compat" puts spark/
	# itself on the path, where Spark's lookup of pyspark_* data sources finds it.
	$(BIN)/python -m pip install --quiet -e ./spark --config-settings editable_mode=compat
	touch $@

# Debian's chromium, for the web console's browser test (tests/system/test_console.py drives it
# through Playwright's executable_path; nothing downloads a browser build). Installed with apt
# when missing, as root or through passwordless sudo.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { APT="apt-get"; [ "$$(id -u)" = 0 ] || APT="sudo -n apt-get"; \
	    $$APT update -qq && DEBIAN_FRONTEND=noninteractive $$APT install -y -qq chromium; }

# Builds the Rust extension in release mode and installs rocketpy into the venv (editable).
install: $(VENV)/.tools
	$(BIN)/maturin develop --release --quiet

run: install
	$(BIN)/rocketpy dev --metrics-port 5557 --console-port 8080 --grpc-port 8081

lint: $(VENV)/.tools
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(BIN)/ruff check python tests spark
	$(BIN)/ruff format --check python tests spark
	$(BIN)/mypy

rust-test:
	cargo test --workspace --locked

# The official RocketMQ 5.x Python client (PyPI rocketmq-python-client, gRPC), a peer of
# tests/compat, in a venv of its own: its package is named `rocketmq`, as the C++ client's is.
PY5_VENV ?= $(HOME)/.cache/rocketpy/py5-venv
PY5_CLIENT := rocketmq-python-client==5.1.2
export ROCKETPY_PY5_PYTHON := $(PY5_VENV)/bin/python
compat-py5:
	@test -f $(PY5_VENV)/.$(PY5_CLIENT) || { $(PYTHON) -m venv $(PY5_VENV) && \
	  $(PY5_VENV)/bin/python -m pip install --quiet $(PY5_CLIENT) && touch $(PY5_VENV)/.$(PY5_CLIENT); }

# rocketmq-client-rust 1.0 (crates.io), driven by tests/compat as a peer client.
compat-rust-client:
	cd compat/rust-client && CARGO_TARGET_DIR=$(COMPAT_TARGET) cargo build --release --locked --quiet

# Two workers, one test file each at a time (module fixtures stay per file): most tests wait
# on servers, peers' timers or a JVM rather than on the CPU, so two run in about half the time.
py-test: install compat-rust-client compat-py5 browser
	$(BIN)/pytest -n 2 --dist loadfile --durations=25
	# The short fault loop of controller mode (network namespaces; skips without them): alone,
	# as its timings are what it measures. `make fault-loop` is the long run.
	$(BIN)/pytest -q tests/fault

# The fast tier, for every edit: the Rust unit tests of every crate (no integration tests)
# and tests/unit (no server, no Spark, no peer). `make test` runs everything.
test-fast: install
	cargo test --workspace --lib --locked
	$(BIN)/pytest -q tests/unit

# rocketmq-rust 1.0's name server and broker, installed into a cache (~12 min the first time).
compat-rocketmq-rust:
	cargo install --locked --quiet rocketmq-namesrv@1.0.0 rocketmq-broker@1.0.0 \
		--root $(ROCKETPY_ROCKETMQ_RUST) --target-dir $(ROCKETPY_ROCKETMQ_RUST)/target

# rocketpy's client against rocketmq-rust's servers, in a network namespace with only a
# loopback interface: that broker binds every interface.
compat-servers: install compat-rocketmq-rust
	unshare --net --map-root-user sh -c 'ip link set lo up && $(BIN)/pytest -m compat_server tests/compat'

# Reruns the whole compatibility suite and writes its table into README.md.
compat-table: install compat-rust-client compat-rocketmq-rust
	unshare --net --map-root-user sh -c 'ip link set lo up && \
		$(BIN)/pytest -m "compat or compat_server" tests/compat --compat-table README.md'

test: install lint rust-test py-test

bench:
	cargo bench --workspace --locked

# The soak (tests/soak/soak.py): name server, broker, 20 producers and 20 consumers in 4 groups
# for SOAK_MINUTES with a broker kill and restart half-way; prints its figures.
SOAK_MINUTES ?= 10
soak: install
	$(BIN)/python tests/soak/soak.py --minutes $(SOAK_MINUTES)

# Coverage-guided fuzzing (libFuzzer through cargo-fuzz, nightly toolchain): every target for
# FUZZ_RUNS inputs; about 10 minutes for the default million each.
FUZZ_RUNS ?= 1000000
fuzz:
	cargo +nightly fuzz --version >/dev/null 2>&1 || cargo +nightly install cargo-fuzz --locked
	RUNS=$(FUZZ_RUNS) fuzz/run.sh

# The SYNC_MASTER kill -9 loop of tests/system/test_ha.py for HA_CRASH_CYCLES cycles (5 in `make test`).
HA_CRASH_CYCLES ?= 100
ha-crash-loop: install
	HA_CRASH_CYCLES=$(HA_CRASH_CYCLES) $(BIN)/pytest -q -s tests/system/test_ha.py -k random

# The Jepsen-style fault loop of controller mode (tests/fault/loop.py): 3 controllers, a name
# server and 3 brokers of group broker-a, each in a network namespace of its own on a private
# bridge (root and `ip netns` needed), a SYNC producer and a consumer; FAULTS faults drawn from
# SEED (random when unset; printed): kill -9, pause and partition of the master, partition of a
# replica, kill -9 of the controller leader. Prints each fault's failover time, p50/max, and the
# checks (no acknowledged message lost, nothing read then rolled back, one master per epoch,
# gapless queues); exits non-zero on a violation. About 15 s a fault.
FAULTS ?= 100
fault-loop: install
	$(BIN)/python tests/fault/loop.py --faults $(FAULTS) $(if $(SEED),--seed $(SEED))

# Replication: slave throughput under batch load, SYNC_MASTER vs ASYNC_MASTER (64 threads).
bench-ha: install
	$(BIN)/python benches/ha.py

# What ACL costs the send path: sync single sends and batches with aclEnable=true (signed,
# verified, rights checked) vs false, alternating rounds of one broker; about 2 minutes.
bench-acl: install
	$(BIN)/python benches/acl_overhead.py

# What Prometheus metrics cost the send path: batch throughput with metricsExporterType=PROM
# (scraped every second) vs DISABLE, alternating rounds of one broker; about 2 minutes.
bench-metrics: install
	$(BIN)/python benches/metrics_overhead.py

# rocketpy side by side with NATS JetStream and Redis Streams (benches/peers/README.md): each
# server on 127.0.0.1 with a temporary store, the same five workloads from Python, medians of
# PEER_ROUNDS rounds; 14 minutes with the defaults here. The servers come from Debian (apt, as
# root or through passwordless sudo, when missing), their clients pinned into the venv only.
# Knobs: PEER_SECONDS PEER_ROUNDS PEER_BACKLOG PEER_PROCS PEER_WINDOW PEER_FETCH PEER_SYSTEMS
# PEER_WORKLOADS.
PEER_CLIENTS := nats-py==2.16.0 redis==8.1.0 hiredis==3.5.0
bench-peers: install
	@command -v nats-server >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 || \
	  { APT="apt-get"; [ "$$(id -u)" = 0 ] || APT="sudo -n apt-get"; \
	    $$APT update -qq && DEBIAN_FRONTEND=noninteractive $$APT install -y -qq nats-server redis-server; }
	$(BIN)/python -m pip install --quiet $(PEER_CLIENTS)
	$(BIN)/python -m benches.peers

# RocketMQ 5.x clients: the official 5.x Python client through the broker's gRPC endpoint next
# to rocketpy's 4.x client on the same broker, send and receive+ack, alternating rounds, and
# Rust drivers of the gRPC protocol, of 4.x pulls and of pops with batch acks over remoting
# (benches/src/bin/grpc_drive.rs, pull_drive.rs, pop_drive.rs) that keep the broker busy;
# about 7 minutes.
bench-grpc: install compat-py5
	cargo build --release --locked --quiet -p rocketpy-benches --bin grpc_drive --bin pull_drive --bin pop_drive
	$(BIN)/python -m benches.grpc

# The push consumer on a 1 M x 100 B backlog, RocketMQ's defaults and 32 messages a call:
# rate and CPU per message of the consumer and of the broker; about 2 minutes.
bench-push: install
	$(BIN)/python -m benches.push_consumer

# Topic scale (100 / 1,000 / 10,000 topics): creation, first send, route lookup, heartbeat,
# broker RSS and disk blocks; about 5 minutes. LEVELS=100,1000 for a shorter run.
LEVELS ?= 100,1000,10000
bench-scale: install
	$(BIN)/python benches/topic_scale.py --levels $(LEVELS)

# The Spark source next to Parquet on a standalone cluster started here (a master and two
# one-core workers): SPARK_BENCH_MESSAGES messages of 1 KiB read offline and online, medians
# of 3 rotating rounds; ~6 minutes and ~23 GB of disk the first time (the store and Parquet
# stay in SPARK_BENCH_DIR for the next run: ~4 minutes).
SPARK_BENCH_MESSAGES ?= 10000000
SPARK_BENCH_DIR ?= $(HOME)/.cache/rocketpy/spark-bench
bench-spark: install
	$(BIN)/python spark/benchmarks/read_vs_parquet.py --messages $(SPARK_BENCH_MESSAGES) \
		--mode both --cluster 2 --rounds 3 --work $(SPARK_BENCH_DIR) \
		--json $(SPARK_BENCH_DIR)/result.json

clean:
	rm -rf $(VENV) target
