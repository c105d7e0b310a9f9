package cmd

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/internal/testref"
)

// runCLI runs the command line and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	status := run(append([]string{"--quiet"}, args...), &stdout, &stderr)
	return status, stdout.String(), stderr.String()
}

// emptyCapture writes a pcap file with a header and no frames.
func emptyCapture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "empty.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewPcapWriter(f, 1, 65535, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestCheckExitStatus(t *testing.T) {
	shared := testref.SharedCaptures(t)
	notCapture := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notCapture, []byte("this is not a capture file\n"), 0o644)
	empty := emptyCapture(t)
	tests := []struct {
		name   string
		args   []string
		status int
		want   []string // substrings of stdout+stderr
	}{
		// The README of the captures gives the verdicts: vectors frame
		// 6 is the only bad ICRC.
		{"vectors one bad", []string{"check", filepath.Join(shared, "vectors/vectors.pcap")}, 1,
			[]string{"FAIL bad-icrc", "frame 6:", "bad ICRC (found 0x78f3530c, expected 0x78f353f3)"}},
		{"ops all good", []string{"check", filepath.Join(shared, "vectors/ops.pcap")}, 0, []string{"PASS"}},
		{"mirror dc", []string{"check", filepath.Join(shared, "real/mlx5-dc.pcap")}, 1, []string{"bad-icrc                 19"}},
		{"mirror dc-2", []string{"check", filepath.Join(shared, "real/mlx5-dc-2.pcap")}, 1, []string{"bad-icrc                 29"}},
		{"mirror rc", []string{"check", filepath.Join(shared, "real/mlx5-rc-mirror.pcap")}, 1, []string{"bad-icrc                 21"}},
		{"mirror uc", []string{"check", filepath.Join(shared, "real/mlx5-uc-sg.pcap")}, 1, []string{"bad-icrc                 17"}},
		{"truncated nccl", []string{"check", filepath.Join(shared, "real/nccl-uc-truncated.pcap")}, 1,
			[]string{"bad-icrc                 20", "unverifiable-icrc       489", "snap length"}},
		{"nccl bad allowed", []string{"check", "--max-bad-icrc", "20", filepath.Join(shared, "real/nccl-uc-truncated.pcap")}, 0, []string{"PASS"}},
		{"nccl unverifiable limited", []string{"check", "--max-bad-icrc", "20", "--max-unverifiable", "0", filepath.Join(shared, "real/nccl-uc-truncated.pcap")}, 1,
			[]string{"FAIL unverifiable-icrc"}},
		{"empty fails", []string{"check", empty}, 1, []string{"no RoCE packets in " + empty}},
		{"empty allowed", []string{"check", "--allow-empty", empty}, 0, []string{"PASS"}},
		{"missing file", []string{"check", filepath.Join(t.TempDir(), "nope.pcap")}, 2, []string{"nope.pcap"}},
		{"not a capture", []string{"check", notCapture}, 2, []string{"notes.txt", "not a capture"}},
		{"bad flag", []string{"check", "--max-bad-icrc", "x", empty}, 2, nil},
		{"one bad of two files", []string{"check", filepath.Join(shared, "vectors/ops.pcap"), filepath.Join(shared, "real/mlx5-dc.pcap")}, 1,
			[]string{"ops.pcap: PASS", "mlx5-dc.pcap: FAIL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := runCLI(t, tc.args...)
			if status != tc.status {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", status, tc.status, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", w, out, errOut)
				}
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	shared := testref.SharedCaptures(t)
	status, out, _ := runCLI(t, "check", "--format", "json", "--show", "3", filepath.Join(shared, "real/mlx5-rc-mirror.pcap"))
	if status != 1 {
		t.Fatalf("exit status %d, want 1", status)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep.Passed || len(rep.Files) != 1 {
		t.Fatalf("passed %v with %d files, want a failure on 1 file", rep.Passed, len(rep.Files))
	}
	f := rep.Files[0]
	// 21 bad packets, 3 shown, 18 more: from the captures' README.
	if len(f.Offenders) != 3 || f.OffendersMore != 18 {
		t.Errorf("%d offenders listed and %d more, want 3 and 18", len(f.Offenders), f.OffendersMore)
	}
	if f.Offenders[0].Frame != 1 || f.Offenders[0].ICRCFound == "" || f.Offenders[0].ICRCExpected == "" {
		t.Errorf("first offender %+v: want frame 1 with both ICRCs", f.Offenders[0])
	}
}

// The JUnit XML layout that CI systems read (the schema Jenkins and most
// others follow): <testsuites> holding <testsuite name tests failures
// errors> elements, each holding <testcase name classname> elements with
// at most one <failure message type> or <error message type>.
type xsdTestsuites struct {
	XMLName  xml.Name       `xml:"testsuites"`
	Tests    *int           `xml:"tests,attr"`
	Failures *int           `xml:"failures,attr"`
	Errors   *int           `xml:"errors,attr"`
	Suites   []xsdTestsuite `xml:"testsuite"`
	Other    []xml.Name     `xml:",any"`
}

type xsdTestsuite struct {
	Name     *string       `xml:"name,attr"`
	Tests    *int          `xml:"tests,attr"`
	Failures *int          `xml:"failures,attr"`
	Errors   *int          `xml:"errors,attr"`
	Cases    []xsdTestcase `xml:"testcase"`
}

type xsdTestcase struct {
	Name      *string     `xml:"name,attr"`
	Classname *string     `xml:"classname,attr"`
	Failures  []xsdResult `xml:"failure"`
	Errors    []xsdResult `xml:"error"`
}

type xsdResult struct {
	Message *string `xml:"message,attr"`
	Type    *string `xml:"type,attr"`
	Text    string  `xml:",chardata"`
}

func TestCheckJUnit(t *testing.T) {
	shared := testref.SharedCaptures(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "report.xml")
	missing := filepath.Join(dir, "missing.pcap")
	status, _, _ := runCLI(t, "check", "--junit", report,
		filepath.Join(shared, "vectors/ops.pcap"), filepath.Join(shared, "real/mlx5-dc.pcap"), missing)
	if status != 2 {
		t.Fatalf("exit status %d, want 2 (one file unreadable)", status)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		schema := filepath.Join(testref.RepoRoot(t), "testdata", "junit.xsd")
		out, err := exec.Command(xmllint, "--noout", "--schema", schema, report).CombinedOutput()
		if err != nil {
			t.Errorf("xmllint rejects the report against %s: %v\n%s", schema, err, out)
		}
	} else {
		t.Log("xmllint not installed: checking the structure in Go only")
	}
	var doc xsdTestsuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report is not XML: %v", err)
	}
	if len(doc.Other) != 0 || len(doc.Suites) != 1 {
		t.Fatalf("want one testsuite and nothing else, got %d suites and %v", len(doc.Suites), doc.Other)
	}
	s := doc.Suites[0]
	if s.Name == nil || s.Tests == nil || s.Failures == nil || s.Errors == nil {
		t.Fatal("testsuite lacks name, tests, failures or errors")
	}
	// 3 files, each with a read case and 8 rules.
	failures, errorsSeen := 0, 0
	files := map[string]bool{}
	for _, c := range s.Cases {
		if c.Name == nil || c.Classname == nil {
			t.Fatal("testcase lacks name or classname")
		}
		files[*c.Classname] = true
		if len(c.Failures)+len(c.Errors) > 1 {
			t.Errorf("testcase %s has several results", *c.Name)
		}
		for _, r := range append(c.Failures, c.Errors...) {
			if r.Message == nil || r.Type == nil {
				t.Errorf("testcase %s: result without message or type", *c.Name)
			}
		}
		failures += len(c.Failures)
		errorsSeen += len(c.Errors)
		if *c.Classname == filepath.Join(shared, "real/mlx5-dc.pcap") && *c.Name == "bad-icrc" {
			if len(c.Failures) != 1 || !strings.Contains(*c.Failures[0].Message, "bad-icrc: 19") {
				t.Errorf("mlx5-dc bad-icrc case: %+v, want a failure for 19 packets", c.Failures)
			}
		}
	}
	if len(files) != 3 {
		t.Errorf("%d files in the report, want 3", len(files))
	}
	if *s.Tests != len(s.Cases) || *s.Failures != failures || *s.Errors != errorsSeen {
		t.Errorf("suite counts tests=%d failures=%d errors=%d; cases say %d, %d, %d", *s.Tests, *s.Failures, *s.Errors, len(s.Cases), failures, errorsSeen)
	}
	if errorsSeen != 1 {
		t.Errorf("%d errors, want 1 (the missing file)", errorsSeen)
	}
	if doc.Tests == nil || *doc.Tests != *s.Tests {
		t.Error("testsuites tests attribute missing or not the suite's")
	}
}
