package connlog

import (
	"cmp"
	"net"
	"slices"
	"strconv"
)

// Destination is the connections to one name on one port.
type Destination struct {
	Name        string `json:"name"` // "" for the connections that named none
	Port        int    `json:"port"`
	Connections int    `json:"connections"`
	Refused     int    `json:"refused"` // of them, refused or failed
	BytesUp     int64  `json:"bytes_up"`
	BytesDown   int64  `json:"bytes_down"`
}

// String is NAME:PORT ("(none)" for no name). Hostile: escape it to
// print it.
func (d Destination) String() string {
	name := d.Name
	if name == "" {
		name = "(none)"
	}
	return net.JoinHostPort(name, strconv.Itoa(d.Port))
}

// MaxDestinations are kept; the connections to further ones count in
// the last, a Destination with the name "" and port 0.
const MaxDestinations = 10000

type destKey struct {
	name string
	port int
}

type destinations struct {
	m    map[destKey]*Destination
	rest *Destination
}

func newDestinations() *destinations { return &destinations{m: map[destKey]*Destination{}} }

func (ds *destinations) add(r parsed) {
	k := destKey{r.Name, r.Port}
	d, ok := ds.m[k]
	if !ok {
		if len(ds.m) >= MaxDestinations {
			if ds.rest == nil {
				ds.rest = &Destination{}
			}
			d = ds.rest
		} else {
			d = &Destination{Name: r.Name, Port: r.Port}
			ds.m[k] = d
		}
	}
	d.Connections++
	if r.Verdict != Allowed {
		d.Refused++
	}
	d.BytesUp += r.BytesUp
	d.BytesDown += r.BytesDown
}

// sorted returns the destinations, most connections first, then by name
// and port; the rest last.
func (ds *destinations) sorted() []Destination {
	out := []Destination{}
	for _, d := range ds.m {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Destination) int {
		return cmp.Or(cmp.Compare(b.Connections, a.Connections), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port))
	})
	if ds.rest != nil {
		out = append(out, *ds.rest)
	}
	return out
}
