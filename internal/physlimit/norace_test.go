//go:build !race

package physlimit

const raceEnabled = false
