#!/usr/bin/env bash
# Debian packages the tests need: Java 17 (Spark), PostgreSQL server + JDBC driver (JDBC catalog),
# SQLite JDBC driver. Installs what is missing when run as root; otherwise says what to install.
# `system-deps.sh java`: Java only (what `make demo` needs).
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ "${1:-all}" != "java" ]; then
  ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
  [ -e /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
  [ -e /usr/share/java/sqlite-jdbc.jar ] || need+=(libxerial-sqlite-jdbc-java)
  command -v runuser >/dev/null 2>&1 || need+=(util-linux)
fi
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${need[*]} (run: sudo apt-get install ${need[*]})" >&2
  echo "tests that need them are skipped" >&2
  exit 0
fi
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
