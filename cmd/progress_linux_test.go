package cmd

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// openPty returns both ends of a new pseudo-terminal, or skips the test when
// the system has none to give.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	return m, s
}

// TestProgressOnPty is the control of TestProgressOnlyOnTerminal: on a
// terminal a bar is made, unless quiet.
func TestProgressOnPty(t *testing.T) {
	m, s := openPty(t)
	defer m.Close()
	defer s.Close()
	if progressOn(s, false) == nil {
		t.Error("no progress bar on a terminal")
	}
	if progressOn(s, true) != nil {
		t.Error("a progress bar on a terminal despite quiet")
	}
}
