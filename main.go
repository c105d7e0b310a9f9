// Command roce-inspect dissects and analyzes RoCE (RDMA over Converged
// Ethernet) captures: per-QP flows, PSN gaps, NAKs, ECN and CNPs, ECMP
// entropy, and the invariant CRC of every packet.
package main

import (
	"os"

	"roce-inspect/cmd"
)

func main() {
	os.Exit(cmd.Execute())
}
