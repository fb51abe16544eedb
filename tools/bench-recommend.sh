#!/usr/bin/env bash
# bench-recommend.sh: whole-process figures for issue 17, as medians of interleaved runs.
#
#   tools/bench-recommend.sh [workdir]        # default workdir: a fresh temp directory
#
# Env: PICKER=path uses a prebuilt picker (default: go build ./cmd/picker), PICKER_FETCH
# a prebuilt picker-fetch (default: built here), RUNS (15)
# cold runs per command, LOAD_SECS (10) per daemon load run, SKIP_BUILD_DB=1 reuses the
# workdir's databases.
#
# It builds picker and the tools (benchgen, benchbase, loadclient), then:
#   1. the 3k database: the embedded snapshot, seeded by picker itself;
#   2. the 100k database: 100k current offers and 1M price intervals written by
#      `picker refresh --provider static` over ten generated price files (every price
#      moves each round);
#   3. cold `picker recommend` against benchbase (the same-driver top-10 SQL), runs
#      interleaved, on both databases; ratio = median(picker) / median(baseline), and
#      the median of the per-pair ratios;
#   4. a 1 %-change static refresh of the 100k database (wall time, peak RSS);
#   5. the daemon on the 100k database under loadclient: 20 clients, four recommend
#      queries and the full /v1/offers listing mixed in.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/picker-bench.XXXXXX)}
mkdir -p "$W/bin"
RUNS=${RUNS:-15}
LOAD_SECS=${LOAD_SECS:-10}
if [[ -z "${PICKER:-}" ]]; then
	go build -o "$W/bin/picker" ./cmd/picker
	PICKER=$W/bin/picker
fi
if [[ -z "${PICKER_FETCH:-}" ]]; then # the aws and gcp adapters' program (unused by these figures, built for completeness)
	go build -o "$W/bin/picker-fetch" ./cmd/picker-fetch
	PICKER_FETCH=$W/bin/picker-fetch
fi
export PICKER_FETCH
go build -o "$W/bin/" ./tools/benchgen ./tools/benchbase ./tools/loadclient
B=$W/bin
echo "workdir $W; picker $PICKER; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

cat >"$W/static.toml" <<TOML
[providers.static]
files = ["$W/prices.csv"]
TOML
: >"$W/empty.toml"

if [[ -z "${SKIP_BUILD_DB:-}" ]]; then
	rm -f "$W"/db3k* "$W"/db100k*
	"$PICKER" --config "$W/empty.toml" --db "$W/db3k" -q providers >/dev/null
	t0=$(date +%s.%N)
	for r in 0 1 2 3 4 5 6 7 8 9; do
		"$B/benchgen" -rows 50000 -round $r >"$W/prices.csv"
		touch -d "@$((1767225600 + r * 86400))" "$W/prices.csv" # one day per round
		"$PICKER" --config "$W/static.toml" --db "$W/db100k" -q refresh --provider static >/dev/null
	done
	echo "built 100k DB in $(echo "$(date +%s.%N) - $t0" | bc) s: $(sqlite3 "$W/db100k" 'SELECT count(*) FROM offers WHERE price IS NOT NULL') current offers, $(sqlite3 "$W/db100k" 'SELECT count(*) FROM prices') price rows"
fi

# ms runs a command once and prints its wall time in milliseconds.
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

stats() { # name, file of "a b" microsecond pairs
	python3 - "$1" "$2" <<'PY'
import statistics, sys
name, path = sys.argv[1], sys.argv[2]
pairs = [tuple(map(int, l.split())) for l in open(path) if l.strip()]
a = statistics.median(p[0] for p in pairs) / 1000
b = statistics.median(p[1] for p in pairs) / 1000
r = statistics.median(p[0] / p[1] for p in pairs)
print(f"{name}: picker median {a:.1f} ms, baseline median {b:.1f} ms, ratio of medians {a/b:.2f}x, median pair ratio {r:.2f}x (n={len(pairs)})")
PY
}

cold() { # label, db
	local f=$W/cold-$1.txt
	: >"$f"
	"$PICKER" --db "$2" --config "$W/empty.toml" recommend --model llama-2-7b --task qlora -o json >/dev/null # warm the page cache
	for _ in $(seq "$RUNS"); do
		a=$(ms "$PICKER" --db "$2" --config "$W/empty.toml" recommend --model llama-2-7b --task qlora -o json)
		b=$(ms "$B/benchbase" -db "$2" -min-vram 8)
		echo "$a $b" >>"$f"
	done
	stats "cold recommend $1" "$f"
}
cold 3k "$W/db3k"
cold 100k "$W/db100k"

# help vs baseline: process start alone.
f=$W/help.txt; : >"$f"
for _ in $(seq "$RUNS"); do echo "$(ms "$PICKER" --help) $(ms "$B/benchbase" -db "$W/db3k")" >>"$f"; done
stats "picker --help (process start)" "$f"

# 1 % change refresh of the 100k database (against round 9's prices).
for i in 1 2 3; do
	"$B/benchgen" -rows 50000 -round 9 -change 1 >"$W/prices.csv"
	touch -d "@$((1767225600 + (10 + i) * 86400))" "$W/prices.csv"
	cp "$W/db100k" "$W/db100k-r"; rm -f "$W/db100k-r-wal" "$W/db100k-r-shm"
	/usr/bin/time -f "%e %M" -o "$W/time.txt" "$PICKER" --config "$W/static.toml" --db "$W/db100k-r" -q refresh --provider static -o csv | tail -1
	read -r secs kb <"$W/time.txt"
	echo "1% change refresh run $i: ${secs} s, peak RSS $((kb / 1024)) MiB"
done

# The daemon at 100k offers.
port=$((20000 + RANDOM % 20000))
"$PICKER" --config "$W/empty.toml" --db "$W/db100k" -q daemon --listen "127.0.0.1:$port" &
dpid=$!
trap 'kill $dpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fs "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
u="http://127.0.0.1:$port/v1/recommend"
q=(-url "$u?model=llama-2-7b&task=qlora" -url "$u?model=llama-2-13b&task=lora&batch=4" -url "$u?model=mistral-7b&task=full-ft" -url "$u?model=llama-2-70b&task=inference&quant=int8")
for i in 1 2 3; do
	echo "daemon /v1/recommend, 20 clients, 4 queries, run $i: $("$B/loadclient" -c 20 -d "${LOAD_SECS}s" "${q[@]}")"
done
echo "daemon /v1/recommend + /v1/offers (full listing) mixed, 20 clients: $("$B/loadclient" -c 20 -d "${LOAD_SECS}s" "${q[@]}" -url "http://127.0.0.1:$port/v1/offers")"
kill $dpid; wait $dpid 2>/dev/null || true
trap - EXIT
