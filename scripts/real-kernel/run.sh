#!/bin/bash
# One real-kernel pressure run (root): a C build (libzstd, make -j2, twice) beside THP-madvised
# bursts, on a machine an mlocked hog leaves FREE_MIB to, with a swap file. Writes
# OUT.before/OUT.after (/proc/vmstat) and OUT.meta (elapsed seconds, kswapd0's and
# kcompactd0's CPU ticks). Restores THP enabled, vm.defrag_mode and swap on exit.
# Usage: run.sh DEFRAG_MODE(0|1) THP_ENABLED(always|madvise) FREE_MIB OUT
# Work files go to $WORK (default /var/tmp/pageblock-real). Issue 23's `lab real` replaces this.
set -u
dm=$1 thp=$2 free=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/var/tmp/pageblock-real}
mkdir -p "$WORK"
T=/sys/kernel/mm/transparent_hugepage
old_thp=$(sed 's/.*\[\(.*\)\].*/\1/' $T/enabled); old_dm=$(cat /proc/sys/vm/defrag_mode)
restore() { kill $bp $hp 2>/dev/null; wait 2>/dev/null; echo $old_thp > $T/enabled; echo $old_dm > /proc/sys/vm/defrag_mode; swapoff "$WORK/swapfile" 2>/dev/null; }
bp= hp=
trap restore EXIT
gcc -O2 -o "$WORK/hog" "$here/hog.c" && gcc -O2 -o "$WORK/bursts" "$here/bursts.c" || exit 1
[ -f "$WORK/swapfile" ] || { fallocate -l 4G "$WORK/swapfile"; chmod 600 "$WORK/swapfile"; mkswap "$WORK/swapfile" >/dev/null; }
swapon "$WORK/swapfile"
echo $dm > /proc/sys/vm/defrag_mode; echo $thp > $T/enabled
src=$(ls -d ~/.cargo/registry/src/*/zstd-sys-*/zstd | head -1)
rm -rf "$WORK/zb"; cp -r "$src" "$WORK/zb"
sync; echo 3 > /proc/sys/vm/drop_caches
cat "$here"/../../target/debug/deps/* > /dev/null 2>&1   # page cache to reclaim
total=$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)
"$WORK/hog" $((total - free)) > "$WORK/hog.out" & hp=$!
while ! grep -q ready "$WORK/hog.out" 2>/dev/null; do sleep 1; done
cpu() { awk '{print $14+$15}' /proc/$(pgrep -x "$1")/stat; }
k0=$(cpu kswapd0); c0=$(cpu kcompactd0)
cp /proc/vmstat "$out.before"; s=$(date +%s.%N)
"$WORK/bursts" 256 400 & bp=$!
for i in 1 2; do
    make -C "$WORK/zb" -f "$here/build.mk" -j2 clean >/dev/null
    make -C "$WORK/zb" -f "$here/build.mk" -j2 >/dev/null 2>&1 || echo BUILD-FAILED
done
e=$(date +%s.%N); cp /proc/vmstat "$out.after"
k1=$(cpu kswapd0); c1=$(cpu kcompactd0)
echo "elapsed $(echo "$e - $s" | bc) kswapd0_ticks $((k1 - k0)) kcompactd0_ticks $((c1 - c0)) clk_tck $(getconf CLK_TCK)" > "$out.meta"
