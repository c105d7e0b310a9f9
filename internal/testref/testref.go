// Package testref locates the references the tests check against: the
// repository's testdata, the reference captures that ship beside the
// repository (never in it: they carry no license to redistribute), and
// tshark, the independent dissector.
package testref

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from
// the test's working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// Testdata returns the repository's testdata directory.
func Testdata(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "testdata")
}

// SharedCaptures returns the reference captures folder, ../shared/captures
// from the repository root, or skips the test with a message when it is
// absent (a user's fresh clone).
func SharedCaptures(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "captures")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference captures not found at %s: they ship beside the repository, not in it", dir)
	}
	return dir
}

// HaveSharedCaptures reports whether the reference captures are present,
// for tests that use them when they can and go on without them.
func HaveSharedCaptures(t testing.TB) (string, bool) {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "captures")
	_, err := os.Stat(dir)
	return dir, err == nil
}

// Tshark returns the path of tshark, or skips the test with a message when
// it is not installed.
func Tshark(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed: the cross-check with an independent dissector needs it (Debian package tshark)")
	}
	return path
}
