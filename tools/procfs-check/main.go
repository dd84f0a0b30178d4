// Command procfs-check is a third-party oracle for pageblock's /proc renderers.
//
// It reads a directory holding files named "buddyinfo" and "zoneinfo" with the Prometheus
// procfs library (github.com/prometheus/procfs, the parser node_exporter uses) and prints
// what that library understood, as JSON on stdout:
//
//	{"buddyinfo": [{"node": "0", "zone": "DMA", "sizes": [0, 0, ...]}, ...],
//	 "zoneinfo":  [{"node": "0", "zone": "DMA", "nr_free_pages": 3840, "min": 58, ...,
//	                "protection": [0, 3019, ...]}, ...]}
//
// Values procfs did not find are null (procfs leaves them nil, e.g. nr_free_pages of an
// unpopulated zone). Usage: procfs-check DIR
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/prometheus/procfs"
)

type buddyRow struct {
	Node  string    `json:"node"`
	Zone  string    `json:"zone"`
	Sizes []float64 `json:"sizes"`
}

type zoneRow struct {
	Node        string   `json:"node"`
	Zone        string   `json:"zone"`
	NrFreePages *int64   `json:"nr_free_pages"`
	Min         *int64   `json:"min"`
	Low         *int64   `json:"low"`
	High        *int64   `json:"high"`
	Spanned     *int64   `json:"spanned"`
	Present     *int64   `json:"present"`
	Managed     *int64   `json:"managed"`
	Protection  []*int64 `json:"protection"`
}

type output struct {
	BuddyInfo []buddyRow `json:"buddyinfo"`
	Zoneinfo  []zoneRow  `json:"zoneinfo"`
}

func run(dir string) error {
	fs, err := procfs.NewFS(dir)
	if err != nil {
		return fmt.Errorf("procfs.NewFS(%q): %w", dir, err)
	}
	bi, err := fs.BuddyInfo()
	if err != nil {
		return fmt.Errorf("BuddyInfo: %w", err)
	}
	zi, err := fs.Zoneinfo()
	if err != nil {
		return fmt.Errorf("Zoneinfo: %w", err)
	}
	out := output{BuddyInfo: []buddyRow{}, Zoneinfo: []zoneRow{}}
	for _, b := range bi {
		out.BuddyInfo = append(out.BuddyInfo, buddyRow{Node: b.Node, Zone: b.Zone, Sizes: b.Sizes})
	}
	for _, z := range zi {
		out.Zoneinfo = append(out.Zoneinfo, zoneRow{
			Node: z.Node, Zone: z.Zone, NrFreePages: z.NrFreePages,
			Min: z.Min, Low: z.Low, High: z.High,
			Spanned: z.Spanned, Present: z.Present, Managed: z.Managed,
			Protection: z.Protection,
		})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: procfs-check DIR   (DIR holds files named buddyinfo and zoneinfo)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "procfs-check:", err)
		os.Exit(1)
	}
}
