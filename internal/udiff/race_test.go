//go:build race

package udiff

const raceEnabled = true
