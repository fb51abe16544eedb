#!/usr/bin/env bash
# bench-refresh-aws.sh: issue 17's whole-process AWS refresh figure. tools/fakeaws serves
# GetProducts, DescribeInstanceTypes and DescribeSpotPriceHistory in the adapter's test
# wire format; `picker refresh --provider aws` runs against it (config `endpoint`) into a
# fresh temp database per run. picker runs the aws adapter in its picker-fetch child
# process (providers/fetchproc); each run reports the wall time and the peak RSS of
# picker and of picker-fetch apart (VmHWM, polled from /proc), and the larger of the two
# (what GNU time's %M on picker reports: the max over it and its reaped children).
#
#   tools/bench-refresh-aws.sh [workdir]
#
# Env: PICKER=path uses a prebuilt picker, PICKER_FETCH=path a prebuilt picker-fetch
# (default: both built here); RUNS (5) runs; REGIONS (300) × TYPES (300)
# on-demand offers (default 90k, from 112,500 PriceList items); SPOT (0) types per region
# that also get a spot price.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/picker-bench-aws.XXXXXX)}
mkdir -p "$W/bin"
RUNS=${RUNS:-5}
REGIONS=${REGIONS:-300}
TYPES=${TYPES:-300}
SPOT=${SPOT:-0}
if [[ -z "${PICKER:-}" ]]; then
	go build -o "$W/bin/picker" ./cmd/picker
	PICKER=$W/bin/picker
fi
if [[ -z "${PICKER_FETCH:-}" ]]; then
	go build -o "$W/bin/picker-fetch" ./cmd/picker-fetch
	PICKER_FETCH=$W/bin/picker-fetch
fi
export PICKER_FETCH
go build -o "$W/bin/" ./tools/fakeaws
rm -f "$W/addr"
"$W/bin/fakeaws" -fixtures providers/aws/testdata -regions "$REGIONS" -types "$TYPES" -spot "$SPOT" -addr-file "$W/addr" 2>"$W/fakeaws.log" &
fpid=$!
trap 'kill $fpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s "$W/addr" ]] && break; sleep 0.1; done
{
	echo "[providers.aws]"
	echo "endpoint = \"$(cat "$W/addr")\""
	printf 'regions = ['
	for i in $(seq "$REGIONS"); do printf '"fk-region-%03d",' "$i"; done
	echo ']'
	echo 'timeout = "10m"'
} >"$W/aws.toml"
export AWS_ACCESS_KEY_ID=AKIDFAKEAWS AWS_SECRET_ACCESS_KEY=fakeaws AWS_SESSION_TOKEN= AWS_PROFILE= AWS_REGION= \
	AWS_CONFIG_FILE=$W/none AWS_SHARED_CREDENTIALS_FILE=$W/none AWS_EC2_METADATA_DISABLED=true
echo "workdir $W; picker $PICKER; picker-fetch $PICKER_FETCH; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $REGIONS regions × $TYPES types, $SPOT spot"
: >"$W/runs.txt"
for i in $(seq "$RUNS"); do
	rm -f "$W/db" "$W/db-wal" "$W/db-shm"
	python3 tools/peakrss.py "$W/time.txt" "$PICKER" --config "$W/aws.toml" --db "$W/db" -q refresh --provider aws -o csv >"$W/out.csv" 2>"$W/err.txt" || { cat "$W/err.txt"; exit 1; }
	read -r secs parent child both <"$W/time.txt"
	offers=$(sqlite3 "$W/db" "SELECT count(*) FROM offers WHERE provider='aws' AND region LIKE 'fk-%' AND price IS NOT NULL" 2>/dev/null || echo '?')
	echo "run $i: ${secs} s, peak RSS picker $((parent / 1024)) MiB, picker-fetch $((child / 1024)) MiB (max of both $((both / 1024)) MiB), $offers aws offers, stderr $(wc -l <"$W/err.txt") lines"
	echo "$secs $parent $child $both" >>"$W/runs.txt"
done
python3 - "$W/runs.txt" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
print(f"aws refresh, whole process: median {med(0):.2f} s (min {min(r[0] for r in rows):.2f}), "
      f"peak RSS medians: picker {med(1)/1024:.0f} MiB, picker-fetch {med(2)/1024:.0f} MiB, max of both {med(3)/1024:.0f} MiB "
      f"(max {max(r[3] for r in rows)/1024:.0f}) over {len(rows)} runs")
PY
