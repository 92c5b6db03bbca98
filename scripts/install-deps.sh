#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian 12 machine, as root. Idempotent:
# each step runs only when its check fails, so CI can call it on every run for free.
set -euo pipefail

# clang/libclang: bindgen for the rocksdb dev-dependency; librocksdb-dev: the prebuilt RocksDB it
# links (see .cargo/config.toml) instead of compiling C++ for half an hour.
apt_packages=(clang libclang-dev librocksdb-dev)
# chromium and its chromedriver: the headless browser WebMonitorITCase drives (Selenium).
apt_packages+=(chromium chromium-driver)
python3 --version >/dev/null 2>&1 || apt_packages+=(python3)
python3 -m pip --version >/dev/null 2>&1 || apt_packages+=(python3-pip)
# Java 17 (JDK: javac, and libjvm for the JNI tests in cargo test) and Maven build java/.
# scripts/test.sh points JAVA_HOME at Debian's JDK 17 when JAVA_HOME is unset.
jdk=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[[ -x $jdk/bin/javac ]] || apt_packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || apt_packages+=(maven)

missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "install-deps: apt-get install ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y "${missing[@]}"
fi

# moto: the S3-compatible server the storage tests run against (tests/support/s3_server.py).
if ! python3 -c 'import moto.server' >/dev/null 2>&1; then
    echo "install-deps: pip install moto[server]" >&2
    # Debian's own python refuses pip installs without --break-system-packages (PEP 668).
    python3 -m pip install 'moto[server]' ||
        python3 -m pip install --break-system-packages 'moto[server]'
fi
