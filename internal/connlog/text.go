package connlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// Text is the destination for a line of text: NAME:PORT escaped
// (termsafe), its connections, the refused ones, and the bytes each way.
func (d Destination) Text() string {
	refused := ""
	if d.Refused > 0 {
		refused = fmt.Sprintf(", %d refused", d.Refused)
	}
	return fmt.Sprintf("%s (%d%s, %s up, %s down)", termsafe.String(d.String()), d.Connections, refused, Bytes(d.BytesUp), Bytes(d.BytesDown))
}

// Bytes is n bytes for a person: 512 B, 1.5 kB, 12.0 MB, 3.1 GB.
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, i := float64(n)/unit, 0
	for ; f >= unit && i < 3; i++ {
		f /= unit
	}
	return fmt.Sprintf("%.1f %cB", f, "kMGT"[i])
}

// Row is the record as a row of agentbox connections' table, its fields
// separated by tabs, the agent's name escaped (termsafe).
func (r Record) Row() string {
	name := "-"
	if r.Name != "" {
		name = termsafe.String(r.Name)
		if r.NameBytes > len(r.Name) {
			name += fmt.Sprintf("... (%d bytes)", r.NameBytes)
		}
	}
	addr := r.Address
	if addr == "" {
		addr = "-"
	}
	return strings.Join([]string{r.Start.UTC().Format("2006-01-02T15:04:05.000Z"), name, strconv.Itoa(r.Port), addr,
		strconv.FormatInt(r.BytesUp, 10), strconv.FormatInt(r.BytesDown, 10),
		(time.Duration(r.DurationMS) * time.Millisecond).String(), r.Verdict, termsafe.String(r.Why)}, "\t")
}

// RowHeader is the header of Row's table.
const RowHeader = "START\tNAME\tPORT\tADDRESS\tUP\tDOWN\tDURATION\tVERDICT\tWHY"
