#!/usr/bin/env bash
# Renders PNG plots from `mcpbench --json` output with gnuplot.
#
# usage: tools/plot-bench.sh [-o OUTDIR] FILE...
#   FILE: one or more files of mcpbench --json lines (comparison lines are skipped).
#   For each scenario found it writes, into OUTDIR (default bench-plots/):
#     <scenario>-throughput.png   one bar per server (the result's "label", else its URL)
#     <scenario>-latency.png      p50 / p90 / p99 per server, log scale, ms
#   and summary.png: throughput of every scenario relative to the first server listed, so one
#   picture compares servers across scenarios. When a (scenario, server) pair appears more than
#   once, the median throughput and the median of each percentile are plotted.
# Installs gnuplot (gnuplot-nox) and python3 from Debian if they are missing, as tools/deps.sh does.
set -euo pipefail

out=bench-plots
while getopts "o:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    h) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-o OUTDIR] FILE..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-o OUTDIR] FILE..." >&2; exit 2; }
for f in "$@"; do [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }; done

missing=()
command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# JSON lines -> one tab-separated data file per scenario, plus summary.dat and a list of scenarios.
python3 - "$work" "$@" <<'PY'
import json, os, statistics, sys
work, files = sys.argv[1], sys.argv[2:]
runs = {}          # (scenario, label) -> list of results
order = []         # labels in first-seen order
units = {}
for path in files:
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line.startswith('{'):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                print(f'{path}:{n}: not JSON, skipped', file=sys.stderr)
                continue
            if r.get('compare') or 'scenario' not in r or 'throughput' not in r:
                continue
            label = r.get('label') or r.get('url', '?')
            runs.setdefault((r['scenario'], label), []).append(r)
            units[r['scenario']] = r.get('unit', 'ops/s')
            if label not in order:
                order.append(label)
if not runs:
    sys.exit('no mcpbench --json results in the input')
med = lambda rs, k: statistics.median(float(x.get(k, 0) or 0) for x in rs)
clean = lambda s: s.replace('"', "'").replace('\t', ' ')
scenarios = sorted({s for s, _ in runs})
with open(os.path.join(work, 'scenarios'), 'w') as sc:
    for s in scenarios:
        labels = [l for l in order if (s, l) in runs]
        with open(os.path.join(work, f'{s}.dat'), 'w') as d:
            for l in labels:
                rs = runs[(s, l)]
                d.write('"%s"\t%g\t%g\t%g\t%g\t%d\n' % (clean(l), med(rs, 'throughput'), med(rs, 'p50_ms'),
                                                      med(rs, 'p90_ms'), med(rs, 'p99_ms'),
                                                      sum(int(x.get('errors', {}).get('total', 0)) for x in rs)))
        sc.write('%s\t%s\n' % (s, units[s]))
# summary: throughput relative to the first server that has each scenario
base = order[0]
with open(os.path.join(work, 'summary.dat'), 'w') as d:
    d.write('scenario\t' + '\t'.join('"%s"' % clean(l) for l in order) + '\n')
    for s in scenarios:
        ref = runs.get((s, base))
        if not ref or med(ref, 'throughput') <= 0:
            continue
        vals = []
        for l in order:
            vals.append('%g' % (med(runs[(s, l)], 'throughput') / med(ref, 'throughput')) if (s, l) in runs else 'NaN')
        d.write('%s\t%s\n' % (s, '\t'.join(vals)))
with open(os.path.join(work, 'nlabels'), 'w') as f:
    f.write(str(len(order)))
with open(os.path.join(work, 'base'), 'w') as f:
    f.write(clean(base))
PY

term='set terminal pngcairo size 900,560 enhanced font "DejaVu Sans,11"'
common='set style fill solid 0.85 border -1; set grid ytics lc rgb "#dddddd"; set key top right; set border 3; set xtics nomirror; set ytics nomirror'

while IFS=$'\t' read -r scen unit; do
  dat="$work/$scen.dat"
  gnuplot <<EOF
$term
$common
set output "$out/$scen-throughput.png"
set title "mcpbench $scen: throughput ($unit, higher is better)"
set ylabel "$unit"
set yrange [0:*]
set boxwidth 0.6
set style data boxes
set key off
set datafile separator "\t"
plot "$dat" using 0:2:xtic(1) lc rgb "#3b75af" notitle, \
     "$dat" using 0:2:(sprintf("%.0f", \$2)) with labels offset 0,0.8 notitle
EOF
  gnuplot <<EOF
$term
$common
set output "$out/$scen-latency.png"
set title "mcpbench $scen: latency percentiles (ms, log scale, lower is better)"
set ylabel "ms"
set logscale y
set style data histograms
set style histogram clustered gap 1
set datafile separator "\t"
plot "$dat" using 3:xtic(1) title "p50" lc rgb "#6baed6", \
     "" using 4 title "p90" lc rgb "#2171b5", \
     "" using 5 title "p99" lc rgb "#08306b"
EOF
  echo "$out/$scen-throughput.png $out/$scen-latency.png"
done < "$work/scenarios"

n=$(cat "$work/nlabels")
base=$(cat "$work/base")
if [ "$(wc -l < "$work/summary.dat")" -gt 1 ]; then
  gnuplot <<EOF
$term
$common
set output "$out/summary.png"
set title "throughput relative to $base (log scale; 1 = same)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set key outside bottom center horizontal
set datafile separator "\t"
set key autotitle columnhead
plot for [i=2:$((n + 1))] "$work/summary.dat" using i:xtic(1)
EOF
  echo "$out/summary.png"
fi
