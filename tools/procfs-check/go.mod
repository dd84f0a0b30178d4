module pageblock/tools/procfs-check

go 1.26.0

require github.com/prometheus/procfs v0.23.0

require golang.org/x/sys v0.49.0 // indirect
