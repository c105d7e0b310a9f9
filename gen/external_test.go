package gen

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"roce-inspect/internal/testref"
	"roce-inspect/layers"
)

var update = flag.Bool("update", false, "rewrite the capture files in testdata/")

// String formats a flow key for test messages.
func (k wkey) String() string { return fmt.Sprintf("%v->%v QP %#x", k.src, k.dst, k.qp) }

// TestTshark has tshark, an independent dissector, decode generated
// captures: every frame must be InfiniBand with the opcode, destination QP,
// PSN and AETH syndrome the generator meant to write.
func TestTshark(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tshark cross-check is skipped")
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed; the cross-check with an independent dissector is skipped")
	}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"mixed", func(*Config) {}},
		{"mixed-ipv6", func(c *Config) { c.IPv6 = true }},
		{"mixed-rocev1", func(c *Config) { c.RoCEv1 = true }},
		{"atomic-pcapng", func(c *Config) { c.Scenario, c.Pcapng = "atomic", true }},
		{"bench", func(c *Config) { c.Scenario, c.Packets, c.Payload = "bench", 200, 1024 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // tshark spends most of its time starting up
			cfg := DefaultConfig()
			tc.mod(&cfg)
			data, _, recs := generate(t, cfg)
			path := filepath.Join(t.TempDir(), "capture")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=,",
				"-e", "frame.number", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
				"-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("tshark: %v\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(recs) {
				t.Fatalf("tshark shows %d frames, the generator wrote %d", len(lines), len(recs))
			}
			for i, line := range lines {
				r := recs[i]
				syn := ""
				if r.HasAETH {
					syn = strconv.Itoa(int(r.Syndrome))
				}
				want := fmt.Sprintf("%d,%d,0x%06x,%d,%s", r.Frame, r.Opcode, r.DestQP, r.PSN, syn)
				if line != want {
					t.Errorf("frame %d: tshark %q, generated %q", i+1, line, want)
				}
			}
		})
	}
}

// TestReferenceICRC checks the tests' own ICRC reference against the
// shared captures' known answers (vectors.pcap): frames 1-5 carry good ICRCs
// of the values the README lists, frame 6 a corrupted one. The README's
// numbers are compared in both byte orders, since it names the value as
// Wireshark reads it while the wire holds it least significant byte first;
// the verdicts do not depend on that.
func TestReferenceICRC(t *testing.T) {
	path := filepath.Join(testref.RepoRoot(t), "..", "shared", "captures", "vectors", "vectors.pcap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("reference captures absent (%v): the ICRC reference is not checked against known answers", err)
	}
	r, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind   layers.NetworkHeader
		readme uint32
		good   bool
	}{
		{layers.ICRCIPv4, 0x78f353f3, true},
		{layers.ICRCIPv6, 0x3e5b743b, true},
		{layers.ICRCIPv4, 0x82fd002a, true},
		{layers.ICRCGRH, 0xe3d856bb, true},
		{layers.ICRCGRH, 0x25f0c038, true},
		{layers.ICRCIPv4, 0, false},
	}
	for i, tc := range tests {
		d, _, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		var net []byte
		if tc.kind == layers.ICRCIPv4 {
			net = d[14 : 14+int(binary.BigEndian.Uint16(d[16:]))]
		} else {
			net = d[14 : 54+int(binary.BigEndian.Uint16(d[18:]))]
		}
		ref := refICRC(tc.kind, net[:len(net)-4])
		wire := binary.LittleEndian.Uint32(net[len(net)-4:])
		if (ref == wire) != tc.good {
			t.Errorf("frame %d: reference %#08x, trailer %#08x: good = %v, README says %v", i+1, ref, wire, ref == wire, tc.good)
		}
		if tc.good && ref != tc.readme && bits.ReverseBytes32(ref) != tc.readme {
			t.Errorf("frame %d: reference %#08x, README %#08x in neither byte order", i+1, ref, tc.readme)
		}
	}
}

// testdataFiles are the captures in the repository's testdata folder that
// golden tests elsewhere read: the demo sample, one per scenario and three
// variants. Each is what `roce-inspect gen` writes with the flags in the
// comment.
func testdataFiles() map[string]Config {
	files := map[string]Config{}
	sample := DefaultConfig() // --scenario mixed --seed 1
	files["sample.pcap"] = sample
	for _, s := range ScenarioNames() {
		files[s+".pcap"] = cliConfig(s) // --scenario S --seed 1
	}
	v6 := sample
	v6.IPv6 = true // --scenario mixed --ipv6
	files["ipv6.pcap"] = v6
	v1 := sample
	v1.RoCEv1 = true // --scenario mixed --rocev1
	files["rocev1.pcap"] = v1
	return files
}

// TestTestdata checks that the captures in testdata/ are byte for byte what
// the generator writes now, so that a change of the generator is noticed;
// with -update it rewrites them.
func TestTestdata(t *testing.T) {
	dir := filepath.Join(testref.RepoRoot(t), "testdata")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, cfg := range testdataFiles() {
		t.Run(name, func(t *testing.T) {
			data, _, _ := generate(t, cfg)
			if len(data) > 200<<10 {
				t.Errorf("%d bytes: larger than the 200 KiB a test file should be", len(data))
			}
			path := filepath.Join(dir, name)
			if *update {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -run TestTestdata -update)", err)
			}
			if !bytes.Equal(old, data) {
				t.Errorf("%s differs from what the generator writes now (%d vs %d bytes); "+
					"if the change is intended, run go test ./gen -run TestTestdata -update", path, len(old), len(data))
			}
		})
	}
}
