//go:build !unix

package ingest_test

func processProbeWorks() bool { return false }
