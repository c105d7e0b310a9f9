package layers

import (
	"fmt"
	"testing"
)

func TestAETHSyndrome(t *testing.T) {
	cases := []struct {
		syndrome uint8
		kind     AckKind
		verdict  string
		credits  int
		credOK   bool
	}{
		{0x00, AckKindACK, "ACK credit 0", 0, true},
		{0x01, AckKindACK, "ACK credit 1", 1, true},
		{0x05, AckKindACK, "ACK credit 5", 6, true},
		{0x0D, AckKindACK, "ACK credit 13", 96, true},
		{0x1E, AckKindACK, "ACK credit 30", 32768, true},
		{0x1F, AckKindACK, "ACK credit 31", 0, false},
		{0x20, AckKindRNRNAK, "RNR NAK timer 0 (655.36 ms)", 0, false},
		{0x21, AckKindRNRNAK, "RNR NAK timer 1 (0.01 ms)", 0, false},
		{0x2E, AckKindRNRNAK, "RNR NAK timer 14 (1.28 ms)", 0, false},
		{0x3F, AckKindRNRNAK, "RNR NAK timer 31 (491.52 ms)", 0, false},
		{0x40, AckKindReserved, "reserved syndrome 0x40", 0, false},
		{0x5F, AckKindReserved, "reserved syndrome 0x5F", 0, false},
		{0x60, AckKindNAK, "NAK PSN sequence error", 0, false},
		{0x61, AckKindNAK, "NAK invalid request", 0, false},
		{0x62, AckKindNAK, "NAK remote access error", 0, false},
		{0x63, AckKindNAK, "NAK remote operational error", 0, false},
		{0x64, AckKindNAK, "NAK invalid RD request", 0, false},
		{0x65, AckKindNAK, "NAK reserved code 5", 0, false},
		{0x7F, AckKindNAK, "NAK reserved code 31", 0, false},
		// Bit 7 is reserved: it does not change the meaning.
		{0x80, AckKindACK, "ACK credit 0", 0, true},
		{0xE3, AckKindNAK, "NAK remote operational error", 0, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("0x%02X", tc.syndrome), func(t *testing.T) {
			a := AETH{Syndrome: tc.syndrome, MSN: 7}
			if a.Kind() != tc.kind {
				t.Errorf("Kind = %v, want %v", a.Kind(), tc.kind)
			}
			if a.Verdict() != tc.verdict {
				t.Errorf("Verdict = %q, want %q", a.Verdict(), tc.verdict)
			}
			if SyndromeString(tc.syndrome) != tc.verdict {
				t.Errorf("SyndromeString = %q", SyndromeString(tc.syndrome))
			}
			if want := tc.verdict + " MSN 7"; a.String() != want {
				t.Errorf("String = %q, want %q", a.String(), want)
			}
			n, ok := a.Credits()
			if n != tc.credits || ok != tc.credOK {
				t.Errorf("Credits = %d, %v; want %d, %v", n, ok, tc.credits, tc.credOK)
			}
			if a.Value() != tc.syndrome&0x1F || a.CreditCode() != a.Value() || a.RNRTimer() != a.Value() || uint8(a.NAKCode()) != a.Value() {
				t.Errorf("Value %d CreditCode %d RNRTimer %d NAKCode %d", a.Value(), a.CreditCode(), a.RNRTimer(), a.NAKCode())
			}
		})
	}
}

// TestRNRTimerTable checks every RNR timer code against the IBTA table,
// written here in milliseconds as the specification gives it.
func TestRNRTimerTable(t *testing.T) {
	ms := []string{
		"655.36", "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12",
		"0.16", "0.24", "0.32", "0.48", "0.64", "0.96", "1.28", "1.92",
		"2.56", "3.84", "5.12", "7.68", "10.24", "15.36", "20.48", "30.72",
		"40.96", "61.44", "81.92", "122.88", "163.84", "245.76", "327.68", "491.52",
	}
	for code, w := range ms {
		us := RNRTimerMicros(uint8(code))
		if got := fmt.Sprintf("%d.%02d", us/1000, us%1000/10); got != w || us%10 != 0 {
			t.Errorf("code %d: %d µs, want %s ms", code, us, w)
		}
		want := fmt.Sprintf("RNR NAK timer %d (%s ms)", code, w)
		if got := SyndromeString(0x20 | uint8(code)); got != want {
			t.Errorf("syndrome 0x%02X: %q, want %q", 0x20|code, got, want)
		}
	}
	if RNRTimerMicros(0x20|14) != 1280 {
		t.Errorf("bits above the low five are not ignored")
	}
}

func TestAckKindAndNAKCodeStrings(t *testing.T) {
	kinds := map[AckKind]string{AckKindACK: "ACK", AckKindRNRNAK: "RNR NAK", AckKindNAK: "NAK", AckKindReserved: "Reserved", 4: "AckKind(4)"}
	for k, w := range kinds {
		if k.String() != w {
			t.Errorf("AckKind(%d) = %q, want %q", uint8(k), k.String(), w)
		}
	}
	codes := map[NAKCode]string{
		NAKPSNSequenceError: "PSN sequence error", NAKInvalidRequest: "invalid request",
		NAKRemoteAccessError: "remote access error", NAKRemoteOperationalError: "remote operational error",
		NAKInvalidRDRequest: "invalid RD request", 5: "reserved NAK code 5", 31: "reserved NAK code 31",
	}
	for c, w := range codes {
		if c.String() != w {
			t.Errorf("NAKCode(%d) = %q, want %q", uint8(c), c.String(), w)
		}
	}
}
