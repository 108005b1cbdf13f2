//go:build !unix

package main

import "io/fs"

// ownerUID is unknown here.
func ownerUID(fs.FileInfo) (int, bool) { return 0, false }
