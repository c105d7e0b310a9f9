//go:build !amd64

package crcfold

// useFold is false: only amd64 has the folding assembly.
const useFold = false

func fold(r uint32, head *[HeadLen]byte, p []byte, k *[nDist][2]uint64) (lo, hi uint64) {
	panic("crcfold: no folding on this architecture")
}
