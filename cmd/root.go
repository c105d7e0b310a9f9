// Package cmd holds the roce-inspect command-line interface.
package cmd

// Execute runs the command line and returns the process exit status.
func Execute() int { return 0 }
