// Package crcfold computes CRC-32/IEEE, the CRC of Ethernet, gzip and the
// RoCE invariant CRC, over long inputs faster than hash/crc32 where the CPU
// has 512-bit carry-less multiplication (VPCLMULQDQ with AVX-512).
//
// hash/crc32 folds its input 64 bytes at a time through one register, so
// every step waits for the multiply before it: it runs at the multiplier's
// latency, not its throughput. Update folds four registers, 256 bytes a
// step, whose multiplies overlap. The result is the same CRC, bit for bit;
// on other CPUs, and for inputs too short to gain, Update is hash/crc32.
//
// How folding works. Bytes are read as polynomial coefficients over GF(2),
// the first byte's low bit the highest power (the CRC is bit-reflected).
// A 16-byte block X followed by D more bytes contributes X·x^(8D) to the
// message, and only its residue modulo the CRC polynomial P matters. With
// X = L·x^64 + H for its two 8-byte halves,
//
//	X·x^(8D) ≡ L·(x^(8D+64) mod P) + H·(x^(8D) mod P)  (mod P),
//
// two 64×32-bit carry-less products that fit in 16 bytes and can be XORed
// into the block D bytes further on. Folding every block into the last one
// leaves 16 bytes with the same residue as the whole input, whose CRC a
// table loop finishes. A register's starting value is XORed into the first
// four bytes, which is what a bit-reflected CRC does with it.
package crcfold

import (
	"hash/crc32"
	"math/bits"
)

// MinLen is the shortest input Update folds; shorter ones go to hash/crc32.
const MinLen = 64

// Fold distances, in bytes, for which constants are kept.
const (
	dist256 = iota // four 64-byte registers, one step of the main loop
	dist64         // one 64-byte register to the next 64 bytes
	dist16         // one 16-byte block to the next
	nDist
)

// consts holds, for each fold distance D, the pair of 64-bit multipliers of
// the low and the high half of a 16-byte block, in the layout the assembly
// loads: low half's multiplier first.
var consts = func() (k [nDist][2]uint64) {
	for i, d := range [nDist]int{dist256: 256, dist64: 64, dist16: 16} {
		k[i] = [2]uint64{multiplier(8*d + 64), multiplier(8 * d)}
	}
	return k
}()

// multiplier returns the constant that multiplies a block half by x^n modulo
// P. The product of two bit-reflected 64-bit numbers is the reflected
// product one bit short of the 128-bit lane it must fill, so the constant
// is x^(n-1) mod P, bit-reflected in 64 bits.
func multiplier(n int) uint64 {
	return bits.Reverse64(xPowMod(n - 1))
}

// poly is the CRC-32/IEEE polynomial with its x^32 term, in the normal
// (not reflected) bit order: bit i is the coefficient of x^i.
const poly = 0x104C11DB7

// xPowMod returns x^n mod P in the normal bit order.
func xPowMod(n int) uint64 {
	r := uint64(1)
	for range n {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= poly
		}
	}
	return r
}

// Update returns crc32.Update(crc, crc32.IEEETable, p).
func Update(crc uint32, p []byte) uint32 {
	if !useFold || len(p) < MinLen {
		return crc32.Update(crc, crc32.IEEETable, p)
	}
	n := len(p) &^ 15
	lo, hi := fold(^crc, nil, p[:n], &consts)
	return updateTable(^reduce(lo, hi), p[n:])
}

// HeadLen is the length of the head UpdateHead takes, and MinTail the
// shortest rest it folds.
const (
	HeadLen = 128
	MinTail = 128
)

// UpdateHead returns the CRC of head followed by p, which is
// crc32.Update(crc32.Update(crc, crc32.IEEETable, head[:]), crc32.IEEETable, p),
// without the cost of a second call. It suits a message whose first bytes
// must be rewritten before the CRC, such as a header with fields masked, and
// whose rest is read in place: the caller copies the first part into head.
// When crc is 0xFFFFFFFF, that is a zero register, zero bytes in front of a
// message do not change its CRC, so a shorter first part can be padded in
// front with zeros to HeadLen. The fold is used when len(p) is a multiple of
// 16 and at least MinTail.
func UpdateHead(crc uint32, head *[HeadLen]byte, p []byte) uint32 {
	if !useFold || len(p) < MinTail || len(p)%16 != 0 {
		return crc32.Update(crc32.Update(crc, crc32.IEEETable, head[:]), crc32.IEEETable, p)
	}
	lo, hi := fold(^crc, head, p, &consts)
	return ^reduce(lo, hi)
}

// remTables[i][b] is the CRC register left by 16 bytes, starting from a zero
// register, that are zero but for byte i, which is b. The register is linear
// in the bytes, so the register of any 16 bytes is the XOR of one entry per
// byte: sixteen independent lookups instead of a chain of sixteen.
var remTables = func() *[16][256]uint32 {
	var t [16][256]uint32
	for b := range 256 {
		// Byte 15, the last, goes through the table once; each earlier
		// byte's entry is the one after it shifted by a zero byte.
		r := crc32.IEEETable[b]
		for i := 15; i >= 0; i-- {
			t[i][b] = r
			r = crc32.IEEETable[byte(r)] ^ r>>8
		}
	}
	return &t
}()

// reduce returns the CRC register left by the 16 bytes lo, hi (little-endian)
// starting from a zero register.
func reduce(lo, hi uint64) uint32 {
	t := remTables
	return t[0][byte(lo)] ^ t[1][byte(lo>>8)] ^ t[2][byte(lo>>16)] ^ t[3][byte(lo>>24)] ^
		t[4][byte(lo>>32)] ^ t[5][byte(lo>>40)] ^ t[6][byte(lo>>48)] ^ t[7][byte(lo>>56)] ^
		t[8][byte(hi)] ^ t[9][byte(hi>>8)] ^ t[10][byte(hi>>16)] ^ t[11][byte(hi>>24)] ^
		t[12][byte(hi>>32)] ^ t[13][byte(hi>>40)] ^ t[14][byte(hi>>48)] ^ t[15][byte(hi>>56)]
}

// updateTable is crc32.Update through the byte table, for the tail of fewer
// than 16 bytes that folding leaves: hash/crc32's own entry point costs more
// than the loop on so few.
func updateTable(crc uint32, p []byte) uint32 {
	t := crc32.IEEETable
	crc = ^crc
	for _, b := range p {
		crc = t[byte(crc)^b] ^ crc>>8
	}
	return ^crc
}
