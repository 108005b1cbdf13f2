package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"time"
)

type tarEntry struct {
	name string
	mode int64
	body []byte
}

// npmMtime is the time npm's own packer gives every entry.
var npmMtime = time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)

// packTarball makes an npm package tarball: gzipped tar, files under package/.
func packTarball(entries []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: npmMtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tamperTarball returns a valid package tarball with the files of tgz and
// one more, package/TAMPERED: other bytes, another integrity.
func tamperTarball(tgz []byte) ([]byte, error) {
	entries, err := readTarball(tgz)
	if err != nil {
		return nil, err
	}
	entries = append(entries, tarEntry{"package/TAMPERED", 0o644, []byte("changed after it was published\n")})
	return packTarball(entries)
}

// readTarball reads the regular files of a package tarball.
func readTarball(tgz []byte) ([]tarEntry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var entries []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		entries = append(entries, tarEntry{h.Name, h.Mode, b})
	}
}

// tarballManifest reads package/package.json from a package tarball, or
// returns nil.
func tarballManifest(tgz []byte) map[string]any {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil
		}
		if h.Name != "package/package.json" {
			continue
		}
		var m map[string]any
		if json.NewDecoder(tr).Decode(&m) != nil {
			return nil
		}
		return m
	}
}

// tarballBin reads package/package.json's bin from a package tarball.
func tarballBin(tgz []byte) any { return tarballManifest(tgz)["bin"] }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
