// Command expfmt-check is a third-party oracle for pageblock's Prometheus exposition.
//
// It reads the text format on stdin, parses it with Prometheus' own parser
// (github.com/prometheus/common/expfmt) and lints it with the rules `promtool check metrics`
// applies (github.com/prometheus/client_golang/prometheus/testutil/promlint). It prints, as
// JSON on stdout, the families it understood (name, type, number of samples) and the lint
// problems; it exits 1 if the text does not parse.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type family struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Help    string `json:"help"`
	Samples int    `json:"samples"`
}

type problem struct {
	Metric string `json:"metric"`
	Text   string `json:"text"`
}

func main() {
	text, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse:", err)
		os.Exit(1)
	}
	out := struct {
		Families []family  `json:"families"`
		Problems []problem `json:"problems"`
	}{Families: []family{}, Problems: []problem{}}
	for name, f := range families {
		out.Families = append(out.Families, family{name, f.GetType().String(), f.GetHelp(), len(f.GetMetric())})
	}
	sort.Slice(out.Families, func(i, j int) bool { return out.Families[i].Name < out.Families[j].Name })
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lint:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, problem{p.Metric, p.Text})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
