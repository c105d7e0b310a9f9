package crcfold

import "golang.org/x/sys/cpu"

// useFold reports whether this CPU and OS run the 512-bit fold.
var useFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasAVX

// fold XORs r into the first four bytes of the message head || p (p alone
// when head is nil) and folds it into 16 bytes with the same residue,
// returned as two little-endian halves. len(p) is a multiple of 16, and at
// least 64, or 128 with a head.
//
//go:noescape
func fold(r uint32, head *[HeadLen]byte, p []byte, k *[nDist][2]uint64) (lo, hi uint64)
