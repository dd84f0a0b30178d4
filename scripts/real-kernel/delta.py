# Print the vmstat delta of real-kernel runs made by run.sh: python3 delta.py OUT [OUT...]
import sys
keys = "thp_fault_alloc thp_fault_fallback compact_stall compact_fail compact_success compact_migrate_scanned compact_free_scanned compact_daemon_migrate_scanned compact_daemon_free_scanned compact_daemon_wake pgscan_kswapd pgsteal_kswapd pgscan_direct pgsteal_direct pswpout pswpin workingset_refault_file workingset_refault_anon allocstall_normal allocstall_dma32 kswapd_low_wmark_hit_quickly kswapd_high_wmark_hit_quickly pgmigrate_fail".split()
def load(p): return {l.split()[0]: int(l.split()[1]) for l in open(p)}
for base in sys.argv[1:]:
    b, a = load(base + ".before"), load(base + ".after")
    print(base, open(base + ".meta").read().strip(), " ".join(f"{k}={a.get(k,0)-b.get(k,0)}" for k in keys))
