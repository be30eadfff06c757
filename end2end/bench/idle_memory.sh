#!/usr/bin/env bash
# strad's memory when idle with servers registered (docs/benchmarks.md): starts BIN in local
# mode over a database of its own, starts NSERV (12) npm example servers on loopback ports,
# registers each through the console's API, waits IDLE seconds (15), and prints VmRSS, its
# anonymous (heap, stacks) and file-backed (the binary's pages) parts, and the largest
# mappings. Extra arguments are environment settings for strad (MIMALLOC_PURGE_DELAY=0 …);
# NO_APPS=1 registers the servers without the `apps` capability (tools only). With
# STRAD_BENCH_SUMMARY set (`./x bench`), adds its VmRSS to that file.
#
#   end2end/bench/idle_memory.sh dist/strad dist/site [NAME=value …]
set -u
BIN=$1; SITE=$2; shift 2
HERE=$(cd "$(dirname "$0")/.." && pwd)
PORT=$((20000 + RANDOM % 10000)); DB=strad_idle_$PORT; OUT=$(mktemp -d)
env "$@" STRAD_BIND=127.0.0.1:$PORT STRAD_PUBLIC_URL=http://127.0.0.1:$PORT STRAD_SITE_ROOT="$SITE" \
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB RUST_LOG=warn STRAD_DEMO=off "$BIN" >"$OUT/out" 2>"$OUT/err" &
STRAD=$!
for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
LINK=$(grep -o 'http://[^ ]*auth/local[^ ]*' "$OUT/out" | head -n1)
JAR=$OUT/jar
curl -s -c "$JAR" -b "$JAR" -o /dev/null "$LINK"
NAMES=(mcp-server-basic-vanillajs mcp-budget-allocator-server mcp-server-debug mcp-scenario-modeler-server
  mcp-cohort-heatmap-server mcp-customer-segmentation-server mcp-system-monitor-server mcp-server-basic-vanillajs
  mcp-server-debug mcp-budget-allocator-server mcp-scenario-modeler-server mcp-cohort-heatmap-server)
NAMES=("${NAMES[@]:0:${NSERV:-12}}")
SERVERS=()
APPS="&cap_apps=on"; [ -n "${NO_APPS:-}" ] && APPS=""
i=0
for name in "${NAMES[@]}"; do
  port=$((PORT + 100 + i))
  PORT=$port "$HERE/node_modules/.bin/$name" >/dev/null 2>&1 & SERVERS+=($!)
  for _ in $(seq 1 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
  status=$(curl -s -b "$JAR" -c "$JAR" -H "Origin: http://127.0.0.1:$PORT" -o /dev/null -w '%{http_code}' \
    --data "slug=s$i&display_name=$name&url=http://127.0.0.1:$port/mcp&cap_tools=on$APPS" \
    "http://127.0.0.1:$PORT/api/servers/register")
  [ "$status" = 200 ] || echo "registering $name answered $status" >&2
  i=$((i + 1))
done
sleep "${IDLE:-15}"
echo "strad idle with ${#NAMES[@]} servers registered:"
STATUS=$(grep -E 'VmRSS|RssAnon|RssFile|Threads' "/proc/$STRAD/status")
echo "$STATUS"
# `./x bench` puts the figure printed above beside the others.
if [ -n "${STRAD_BENCH_SUMMARY:-}" ]; then
  awk -v n="${#NAMES[@]}" '/^VmRSS/ { rss = $2 } /^RssAnon/ { anon = $2 }
    END { printf "VmRSS idle, %d servers registered (heap and stacks)\t%.1f MiB (%.1f MiB)\t≤ 60 MB\n", n, rss / 1024, anon / 1024 }' \
    <<<"$STATUS" >>"$STRAD_BENCH_SUMMARY"
fi
echo "largest mappings (resident kB, range, file):"
awk '/^[0-9a-f]+-[0-9a-f]+ /{m=$1" "$6} /^Rss:/{if($2>1000) print "  "$2, m}' "/proc/$STRAD/smaps" | sort -rn
kill "$STRAD"; for pid in "${SERVERS[@]}"; do kill "$pid"; done; wait "$STRAD" 2>/dev/null
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" 2>/dev/null
rm -rf "$OUT"
