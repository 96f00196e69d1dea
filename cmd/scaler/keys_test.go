package main

import (
	"os"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
)

// The README's key tables are generated from the schema; CI fails here when
// a key changed and `go run ./cmd/scaler keys --write README.md` was not run.
func TestREADMEKeyTablesAreFresh(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, changed, err := newSchema(allow.Default(), nil, scrape.Kube{}, nil, nil).UpdateDocs(doc)
	if err != nil {
		t.Fatal(err)
	}
	if changed {
		t.Fatal("README.md's trigger-key tables are stale: run `go run ./cmd/scaler keys --write README.md`")
	}
}
