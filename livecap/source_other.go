//go:build !linux

package livecap

import "roce-inspect/capture"

// Source reads frames from a live interface; on this system it cannot be
// opened.
type Source struct{}

// Open returns ErrUnsupported: live capture uses Linux AF_PACKET sockets.
func Open(iface string, opts Options) (*Source, error) { return nil, ErrUnsupported }

// Name returns the empty string.
func (s *Source) Name() string { return "" }

// Next returns ErrClosed.
func (s *Source) Next(f *capture.Frame) error { return ErrClosed }

// Stats returns ErrClosed.
func (s *Source) Stats() (Stats, error) { return Stats{}, ErrClosed }

// Close returns ErrClosed.
func (s *Source) Close() error { return ErrClosed }
