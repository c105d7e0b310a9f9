package cmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"roce-inspect/internal/testref"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGolden runs commands on the writer-made captures in testdata and
// compares their output with the golden files. The golden files were read
// and checked by hand when written (and the decode output is cross-checked
// frame by frame against tshark in the dissect tests); -update rewrites them
// after an intended change, to be reviewed in the diff.
func TestGolden(t *testing.T) {
	root := testref.RepoRoot(t)
	td := filepath.Join(root, "testdata")
	tests := []struct {
		golden string
		args   []string
		status int
	}{
		{"decode-sample.txt", []string{"decode", "sample.pcap"}, 0},
		{"decode-verbose-rc-read.txt", []string{"decode", "-V", "-c", "6", "rc-read.pcap"}, 0},
		{"decode-json-atomic.jsonl", []string{"decode", "--format", "json", "atomic.pcap"}, 0},
		{"decode-rocev1.txt", []string{"decode", "rocev1.pcap"}, 0},
		{"decode-ipv6.txt", []string{"decode", "-c", "12", "ipv6.pcap"}, 0},
		{"analyze-sample.txt", []string{"--color", "never", "sample.pcap"}, 0},
		{"analyze-sample.json", []string{"analyze", "--format", "json", "sample.pcap"}, 0},
		{"analyze-sample.csv", []string{"analyze", "--format", "csv", "sample.pcap"}, 0},
		{"analyze-loss-gbn.txt", []string{"analyze", "--color", "never", "loss-gbn.pcap"}, 0},
		{"check-bad-icrc.txt", []string{"check", "bad-icrc.pcap"}, 1},
		{"check-sample.txt", []string{"check", "sample.pcap"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			t.Chdir(td)
			var stdout, stderr bytes.Buffer
			status := run(append([]string{"--quiet"}, tc.args...), &stdout, &stderr)
			if status != tc.status {
				t.Fatalf("exit status %d, want %d\nstderr: %s", status, tc.status, stderr.String())
			}
			path := filepath.Join(td, "golden", tc.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("output differs from %s; got:\n%s", path, stdout.String())
			}
		})
	}
}
