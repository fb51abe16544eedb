#!/usr/bin/env bash
# bench-market.sh: marketplace-scale figures for issue 29, as medians of interleaved runs.
#
#   tools/bench-market.sh [workdir]        # default workdir: a fresh temp directory
#
# Env: PICKER=path (default: go build ./cmd/picker), BEFORE=path an older picker to
# interleave with it (each gets its own databases: a newer schema is refused by an older
# picker), RUNS (11) cold runs per command, LOAD_SECS (10) per daemon run, LOADS (3)
# daemon runs per picker, SKIP_BUILD_DB=1 reuses the workdir's databases, HOSTS=1 gives
# every marketplace host host facts (`benchgen -hosts`: reliability, max CUDA, driver,
# network, disk, verification) through the price file's host columns. A picker whose
# static provider lacks those columns refuses the file ("unknown column"), so for it
# (found by a one-row probe) the hosts are written without them and their host facts
# set afterwards with sqlite3 from the same generator's columns, as its refresh would
# have stored them (its fit-fact sets then wait for its next write; such a picker reads
# every offer of a store with host facts anyway).
#
# Every offer is its own shape: `benchgen -market` writes marketplace hosts (one instance
# type each). Per picker:
#   1. the 3k database: the embedded snapshot, seeded by picker itself;
#   2. the 100k database: 100k current offers (plus the snapshot's) and 300k price rows,
#      three rounds of `picker refresh --provider static` (every price moves each round);
#   3. the 30k database: 30k offers, three rounds, for the refresh figure;
# then, interleaved across pickers:
#   4. cold `picker recommend` against benchbase (the same-driver indexed top-10 SQL) on
#      the 3k and 100k databases: wall medians, the ratio of medians, and peak RSS
#      (tools/peakrss.py);
#   5. a 30k-offer refresh with 10 % of prices changed (a copy of the 30k database each
#      run): wall time and peak RSS;
#   6. the daemon on the 100k database under loadclient: 20 clients, every request a
#      different job (loadclient's {n}), so no answer comes from a cache.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/picker-market.XXXXXX)}
mkdir -p "$W/bin"
RUNS=${RUNS:-11}
LOAD_SECS=${LOAD_SECS:-10}
LOADS=${LOADS:-3}
if [[ -z "${PICKER:-}" ]]; then
	go build -o "$W/bin/picker" ./cmd/picker
	PICKER=$W/bin/picker
fi
go build -o "$W/bin/" ./tools/benchgen ./tools/benchbase ./tools/loadclient
B=$W/bin
labels=(after)
declare -A bin=([after]=$PICKER)
if [[ -n "${BEFORE:-}" ]]; then
	labels=(before after)
	bin[before]=$BEFORE
fi
echo "workdir $W; pickers: ${labels[*]}; hosts: ${HOSTS:-no}; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$W/empty.toml"

# hostcols label: whether label's picker reads the host columns of a price file.
hostcols() {
	local d=$W/$1/probe
	mkdir -p "$d"
	rm -f "$d"/db*
	"$B/benchgen" -market -hosts -rows 1 >"$d/p.csv"
	printf '[providers.static]\nfiles = ["%s"]\n' "$d/p.csv" >"$d/c.toml"
	"${bin[$1]}" --config "$d/c.toml" --db "$d/db" -q refresh --provider static >/dev/null 2>&1
}

build() { # label, db, rows
	local l=$1 db=$2 rows=$3 gen=(-market) late=
	cat >"$W/$l/static.toml" <<TOML
[providers.static]
files = ["$W/$l/prices.csv"]
TOML
	rm -f "$db" "$db-wal" "$db-shm"
	if [[ -n "${HOSTS:-}" ]]; then
		if hostcols "$l"; then gen+=(-hosts); else late=1; fi
	fi
	for r in 0 1 2; do
		"$B/benchgen" "${gen[@]}" -rows "$rows" -round $r >"$W/$l/prices.csv"
		touch -d "@$((1767225600 + r * 86400))" "$W/$l/prices.csv" # one day per round
		"${bin[$l]}" --config "$W/$l/static.toml" --db "$db" -q refresh --provider static >/dev/null
	done
	if [[ -n "$late" ]]; then
		"$B/benchgen" -market -hosts -rows "$rows" -round 2 >"$W/$l/hosts.csv"
		sqlite3 "$db" <<SQL
.mode csv
.import $W/$l/hosts.csv h
UPDATE offers SET host_reliability = h.reliability, host_max_cuda = h.max_cuda, host_driver = h.driver,
	host_net_up_mbps = h.net_up_mbps, host_net_down_mbps = h.net_down_mbps, host_disk_gb = h.disk_gb,
	host_verification = h.verification
	FROM h WHERE offers.provider = 'static' AND offers.instance_type = h.instance_type;
DROP TABLE h;
SQL
	fi
}
for l in "${labels[@]}"; do
	mkdir -p "$W/$l"
	if [[ -z "${SKIP_BUILD_DB:-}" ]]; then
		rm -f "$W/$l"/db3k*
		"${bin[$l]}" --config "$W/empty.toml" --db "$W/$l/db3k" -q providers >/dev/null
		t0=$(date +%s.%N)
		build "$l" "$W/$l/db100k" 50000
		echo "$l: built the 100k DB in $(echo "$(date +%s.%N) - $t0" | bc) s: $(sqlite3 "$W/$l/db100k" 'SELECT count(*) FROM offers WHERE price IS NOT NULL') current offers, $(sqlite3 "$W/$l/db100k" 'SELECT count(*) FROM prices') price rows, $(sqlite3 "$W/$l/db100k" 'SELECT count(*) FROM shapes') shapes"
		build "$l" "$W/$l/db30k" 15000
	fi
done

# run CMD...: CMD's wall time (from date, µs resolution), then CMD again under
# peakrss.py (which polls every 5 ms, too coarse for the wall time) for its peak RSS
# (getrusage's, exact) and under /usr/bin/time for its CPU time (user + system, less
# sensitive than the wall time to a loaded machine); prints "wall_ms max_rss_kb cpu_ms".
run() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	python3 tools/peakrss.py "$W/rss.txt" "$@" >/dev/null 2>&1 || true
	read -r _ _ _ kb <"$W/rss.txt"
	/usr/bin/time -f "%U %S" -o "$W/cpu.txt" "$@" >/dev/null 2>&1 || true
	echo "$(((t1 - t0) / 1000)) $kb $(tail -1 "$W/cpu.txt")" | awk '{printf "%.3f %d %.0f\n", $1 / 1000, $2, ($3 + $4) * 1000}'
}

stats() { # name, file of "label wall_ms rss_kb cpu_ms base_ms base_cpu_ms" lines
	python3 - "$1" "$2" <<'PY'
import statistics, sys, collections
name, path = sys.argv[1], sys.argv[2]
by = collections.defaultdict(list)
for l in open(path):
    if l.strip():
        lab, wall, rss, cpu, base, bcpu = l.split()
        by[lab].append((float(wall), int(rss), float(cpu), float(base), float(bcpu)))
for lab, rows in by.items():
    a = statistics.median(r[0] for r in rows)
    b = statistics.median(r[3] for r in rows)
    rss = statistics.median(r[1] for r in rows) / 1024
    pr = statistics.median(r[0] / r[3] for r in rows)
    ca, cb = statistics.median(r[2] for r in rows), statistics.median(r[4] for r in rows)
    print(f"{name} {lab}: picker median {a:.1f} ms, baseline median {b:.1f} ms, ratio of medians {a/b:.2f}x, median pair ratio {pr:.2f}x; CPU medians {ca:.0f} / {cb:.0f} ms; peak RSS median {rss:.1f} MiB (n={len(rows)})")
PY
}

cold() { # name, db file name
	local f=$W/cold-$1.txt
	: >"$f"
	for l in "${labels[@]}"; do "${bin[$l]}" --db "$W/$l/$2" --config "$W/empty.toml" recommend --model llama-2-7b --task qlora -o json >/dev/null; done # page cache
	for _ in $(seq "$RUNS"); do
		for l in "${labels[@]}"; do
			read -r wall kb cpu < <(run "${bin[$l]}" --db "$W/$l/$2" --config "$W/empty.toml" recommend --model llama-2-7b --task qlora -o json)
			read -r base _ bcpu < <(run "$B/benchbase" -db "$W/$l/$2" -min-vram 8)
			echo "$l $wall $kb $cpu $base $bcpu" >>"$f"
		done
	done
	stats "cold recommend $1" "$f"
}
cold 3k db3k
cold 100k db100k

# A 30k-offer refresh with 10 % of prices changed, against round 2's prices.
f=$W/refresh.txt
: >"$f"
for i in $(seq 5); do
	for l in "${labels[@]}"; do
		hf=()
		if [[ -n "${HOSTS:-}" ]] && hostcols "$l"; then hf=(-hosts); fi
		"$B/benchgen" -market ${hf[@]+"${hf[@]}"} -rows 15000 -round 2 -change 10 >"$W/$l/prices.csv"
		touch -d "@$((1767225600 + (3 + i) * 86400))" "$W/$l/prices.csv"
		cp "$W/$l/db30k" "$W/$l/db30k-r"
		rm -f "$W/$l/db30k-r-wal" "$W/$l/db30k-r-shm"
		/usr/bin/time -f "%e %U %S %M" -o "$W/time.txt" "${bin[$l]}" --config "$W/$l/static.toml" --db "$W/$l/db30k-r" -q refresh --provider static >/dev/null
		read -r wall user sys kb <"$W/time.txt"
		echo "$l $wall $kb $(python3 -c "print($user + $sys)")" >>"$f"
	done
done
python3 - "$f" <<'PY'
import statistics, sys, collections
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    lab, wall, kb, cpu = l.split()
    by[lab].append((float(wall), int(kb), float(cpu)))
for lab, rows in by.items():
    print(f"30k-offer refresh, 10 % changed, {lab}: median {statistics.median(r[0] for r in rows):.2f} s, CPU median {statistics.median(r[2] for r in rows):.2f} s, peak RSS median {statistics.median(r[1] for r in rows)/1024:.1f} MiB (n={len(rows)}, {' '.join(f'{r[0]:.2f}' for r in rows)} s)")
PY

# The daemon at 100k marketplace offers, every request a different job.
daemon() { # label
	local l=$1 port=$((20000 + RANDOM % 20000))
	"${bin[$l]}" --config "$W/empty.toml" --db "$W/$l/db100k" -q daemon --listen "127.0.0.1:$port" 2>>"$W/daemon-$l.log" &
	local d=$!
	for _ in $(seq 100); do curl -fs "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	local u="http://127.0.0.1:$port/v1/recommend"
	local c0 out c1
	c0=$(awk '{print $14 + $15}' "/proc/$d/stat")
	out=$("$B/loadclient" -c 20 -d "${LOAD_SECS}s" \
		-url "$u?model=llama-2-7b&task=qlora&tokens={n}000000" \
		-url "$u?model=llama-2-13b&task=lora&batch=4&tokens={n}00000" \
		-url "$u?model=mistral-7b&task=inference&requests={n}&output-tokens=200" \
		-url "$u?model=llama-2-70b&task=inference&quant=int8&tokens={n}0000")
	c1=$(awk '{print $14 + $15}' "/proc/$d/stat")
	# The daemon's CPU time over the run (clock ticks, refusals included) per answer.
	local n
	n=$(echo "$out" | sed -E 's/requests=([0-9]+) .*/\1/')
	echo "daemon $l, 20 clients, distinct jobs: $out daemon_cpu_s=$(python3 -c "print(round(($c1 - $c0) / $(getconf CLK_TCK), 2))") cpu_ms_per_request=$(python3 -c "print(round(($c1 - $c0) / $(getconf CLK_TCK) * 1000 / max($n, 1), 2))")"
	kill $d
	wait $d 2>/dev/null || true
}
for _ in $(seq "$LOADS"); do
	for l in "${labels[@]}"; do daemon "$l"; done
done
